#ifndef STRATA_IMAGE_DECODE_H
#define STRATA_IMAGE_DECODE_H
/* Terminal thumbnails: PNG and JPEG decoded to RGBA (libpng, libjpeg), drawn as coloured
   Unicode symbols (chafa).

   The three libraries (and glib and pcre2, which chafa needs) are opened with dlopen the first
   time an image is decoded or drawn, not linked: a process that draws no thumbnail (`strata
   list`, `strata --version`) does not load them at start. Only libpng's and libjpeg's headers are
   needed at build time; the few chafa functions used are declared in image_decode.c. When a
   library cannot be opened, the function that needs it fails with the loader's message. */
#include <stddef.h>
#include <stdint.h>

/// Decodes a PNG or JPEG (chosen by signature) into straight-alpha RGBA, top row first, row
/// stride w*4. JPEGs are downscaled while decoding (1/2, 1/4 or 1/8) keeping both sides at
/// least `min_side`. Images larger than 16384 on a side or 64 Mpixel are refused.
/// Returns a malloc'ed buffer to free(), or NULL with a message in `err`.
uint8_t *imgdec_decode_rgba(const uint8_t *data, size_t len, int min_side, int *width, int *height, char *err, size_t err_len);

/// How many colours the drawing may use.
enum imgdec_colors { IMGDEC_TRUECOLOR = 0, IMGDEC_INDEXED_240 = 1, IMGDEC_INDEXED_16 = 2 };

/// Draws straight-alpha RGBA pixels (`width` × `height`, stride width*4) in at most `*columns` ×
/// `*rows` terminal cells, with block, half-block, space and solid symbols, keeping the image's
/// aspect for cells twice as tall as wide; `*columns` and `*rows` become the cells used.
/// Returns the escape-coded text, rows separated by "\n", malloc'ed for free(); NULL with a
/// message in `err` when chafa cannot be loaded or draws nothing.
char *imgdec_draw_symbols(const uint8_t *rgba, int width, int height, int *columns, int *rows, enum imgdec_colors colors,
                          char *err, size_t err_len);

#endif
