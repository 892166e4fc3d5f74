# Turns a text file into a C++ source defining `extern const char SYMBOL[]` with its contents.
file(READ ${IN} CONTENT)
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\nextern const char ${SYMBOL}[];\nconst char ${SYMBOL}[] = R\"__LS__(${CONTENT})__LS__\";\n")
