# Loads Lowerscope's torch afresh and runs one script (core/script/python_host.cpp calls main()).
import builtins
import linecache
import os
import sys
import traceback
import types

PACKAGES = {"torch", "torch.nn", "torch.optim", "torch._dynamo"}
ORDER = ["torch", "torch.nn.functional", "torch.nn", "torch.optim", "torch._dynamo", "lowerscope"]


class _Output:
    def write(self, s):
        import _lowerscope
        _lowerscope.write(s)
        return len(s)

    def flush(self):
        pass

    def isatty(self):
        return False


def _load(sources):
    for name in list(sys.modules):
        if name == "torch" or name.startswith("torch.") or name == "lowerscope":
            del sys.modules[name]
    mods = {}
    for name in ORDER:
        m = types.ModuleType(name)
        path = name.replace(".", "/")
        m.__file__ = "<lowerscope>/" + (path + "/__init__.py" if name in PACKAGES else path + ".py")
        if name in PACKAGES:
            m.__path__ = []
        sys.modules[name] = mods[name] = m
    for name in ORDER:
        if "." in name:
            parent, _, leaf = name.rpartition(".")
            setattr(mods[parent], leaf, mods[name])
    for name in ORDER:
        exec(compile(sources[name], mods[name].__file__, "exec"), mods[name].__dict__)


class NotImplementedModuleError(NotImplementedError, ModuleNotFoundError):
    """A torch submodule this torch lacks (torch.utils.data, torch.optim.lr_scheduler): the import
    raises NotImplementedError naming it (a ModuleNotFoundError too, for `except ImportError:`)."""


class _MissingTorchModules:
    """The last finder on sys.meta_path: `import torch.X` for a module we do not provide."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith("torch."):
            e = NotImplementedModuleError("%s is not supported by Lowerscope's torch" % name)
            e.name = name
            raise e
        return None


def _traceback(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<lowerscope")]
    out = ["Traceback (most recent call last):\n"] if frames else []
    out += traceback.format_list(frames)
    out += traceback.format_exception_only(type(exc), exc)
    return "".join(out)


def main(source, filename, sources):
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = _Output()
    ok, error = True, ""
    folder = os.path.dirname(os.path.abspath(filename))
    try:
        _load(sources)
        if not any(isinstance(f, _MissingTorchModules) for f in sys.meta_path):
            sys.meta_path.append(_MissingTorchModules())
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        sys.argv = [filename]
        namespace = {"__name__": "__main__", "__file__": filename, "__builtins__": builtins}
        exec(compile(source, filename, "exec"), namespace)
    except KeyboardInterrupt as e:
        ok, error = False, _traceback(e) + "the script was stopped\n"
    except SystemExit as e:
        ok = e.code in (0, None)
        error = "" if ok else "SystemExit: %s\n" % e.code
    except BaseException as e:  # the script's own error: shown, and the app goes on
        ok, error = False, _traceback(e)
    finally:
        sys.stdout, sys.stderr = saved
        # The script's own modules are read afresh by the next run (the user may have edited them).
        for name, m in list(sys.modules.items()):
            f = getattr(m, "__file__", None) or ""
            if f.startswith(folder + os.sep):
                del sys.modules[name]
    dyn = sys.modules.get("torch._dynamo")
    log = dyn._log() if dyn is not None and hasattr(dyn, "_log") else {"graphs": [], "breaks": []}
    return {"ok": ok, "error": error, "graphs": log["graphs"], "breaks": log["breaks"]}
