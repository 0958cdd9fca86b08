#ifndef CTEXTWIDTH_H
#define CTEXTWIDTH_H
#include <stdint.h>
/// wcwidth(3) of one code point under C.UTF-8, whatever the process's locale: -1 unknown or
/// non-printable, 0 combining, 1 or 2.
int ctw_wcwidth(uint32_t codepoint);
#endif
