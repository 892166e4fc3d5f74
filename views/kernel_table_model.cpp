#include "kernel_table_model.h"

#include "pipeline/pipeline.h"

namespace ls {

void KernelTableModel::setResult(const CompileResult* r) {
  beginResetModel();
  r_ = r;
  endResetModel();
}

int KernelTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !r_ ? 0 : static_cast<int>(r_->kernels.size());
}

int KernelTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant KernelTableModel::data(const QModelIndex& index, int role) const {
  if (!r_ || !index.isValid() || index.row() >= rowCount()) return {};
  const KernelReport& k = r_->kernels[index.row()];
  double total = 0;
  for (const auto& x : r_->kernels) total += x.ms;
  if (role == Qt::TextAlignmentRole && index.column() >= Ms && index.column() <= Peak)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::UserRole) {  // raw values, for sorting and tests
    switch (index.column()) {
      case Ms: return k.ms;
      case Bytes: return static_cast<qlonglong>(k.bytes);
      case GBps: return k.gbps;
      case Peak: return r_->bandwidth_gbps > 0 ? k.gbps / r_->bandwidth_gbps : 0.0;
      case Share: return total > 0 ? k.ms / total : 0.0;
      default: break;
    }
  }
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case Name: return QString::fromStdString(k.name);
    case Kind: {
      // A matrix multiply's epilogue runs inside it (CPU), on each block of rows the library (or
      // generated GEMM template) computed.
      const bool epilogue = k.how == "epilogue";
      const bool tmpl = k.how.rfind("template", 0) == 0;
      const bool with_epilogue = k.how == "library+epilogue" || k.how == "template+epilogue";
      if (role == Qt::ToolTipRole) {
        QString tip;
        const bool cuda = r_->device == Device::cuda;
        if ((epilogue || with_epilogue) && cuda)
          tip = QObject::tr("The epilogue runs inside the GEMM template before it, on each element of the product as the "
                            "template stores it: no kernel of its own reads the product back; its time is in the template's.");
        else if (epilogue || with_epilogue)
          tip = QObject::tr("The epilogue runs inside the matrix multiply before it, on each block of the product's rows right "
                            "after the library computed it, while the rows are in cache; its time is in the multiply's.");
        if (tmpl)
          tip += (tip.isEmpty() ? "" : "\n") +
                 (cuda ? QObject::tr("Not a library call: this multiply is a GEMM template, CUDA C++ generated for its sizes (its "
                                     "source is the kernel's lines in the source view), chosen by max-autotune where it beat "
                                     "cuBLAS; the launch line below gives its tile.")
                       : QObject::tr("Not a library call: this multiply is a GEMM template, C++ generated for its sizes (its source "
                                     "is the kernel's lines in the source view); the launch line below says who chose it."));
        // How it ran: a CUDA kernel's launch, a multiply max-autotune cut otherwise than the heuristic.
        if (!k.launch.empty()) tip += (tip.isEmpty() ? "" : "\n") + QString::fromStdString(k.launch);
        if (!tip.isEmpty()) return tip;
      }
      const std::string base = tmpl ? "template" : kernel_kind_name(k.kind);
      const std::string kind = epilogue ? "epilogue" : with_epilogue ? base + " + epilogue" : base;
      return QString::fromStdString(r_->train ? kind + " · " + k.phase : kind);
    }
    case Ms:
      if (k.how == "epilogue" && index.row() > 0)
        return QObject::tr("in %1").arg(QString::fromStdString(r_->kernels[static_cast<size_t>(index.row()) - 1].name));
      if (role == Qt::ToolTipRole && k.host_us > 0)  // CUDA: what issuing it costs the host, beside the device's time
        return QObject::tr("%1 µs on the device; the host takes %2 µs to issue it (its launches and library calls)")
            .arg(k.ms * 1000.0, 0, 'f', 2)
            .arg(k.host_us, 0, 'f', 1);
      return QString::number(k.ms * 1000.0, 'f', 2) + " µs";
    case Share: return total > 0 ? QString::number(100.0 * k.ms / total, 'f', 1) + " %" : QString("-");
    case Bytes: return QString::number(k.bytes);
    case GBps: return QString::number(k.gbps, 'f', 2);
    case Peak:
      if (role == Qt::ToolTipRole) {
        QString tip = QObject::tr("%1 GB/s of the %2 GB/s this device copies at (measured)").arg(k.gbps, 0, 'f', 1).arg(r_->bandwidth_gbps, 0, 'f', 1);
        // The copy is measured on a buffer larger than the caches: a kernel whose operands stay in
        // them (a small model run again and again) moves its bytes faster than memory can.
        if (r_->bandwidth_gbps > 0 && k.gbps > r_->bandwidth_gbps)
          tip += QObject::tr("; above it, the kernel's operands were in the caches (the copy is measured on a buffer "
                             "larger than they are)");
        return tip;
      }
      return r_->bandwidth_gbps > 0 ? QString::number(100.0 * k.gbps / r_->bandwidth_gbps, 'f', 1) + " %" : QString("-");
    case Nodes: {
      QStringList n;
      for (const auto& s : k.nodes) n << QString::fromStdString(s);
      return n.join(", ");
    }
    default: return {};
  }
}

QVariant KernelTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Kernel", "Kind", "Time", "Share", "Bytes", "GB/s", "% of bandwidth", "Graph nodes"};
  return section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace ls
