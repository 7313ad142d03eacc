// Declarations only (include/CSQLiteNIO.h); a C target needs one source file.
#include "CSQLiteNIO.h"
