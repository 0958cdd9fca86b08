#ifndef STRATA_IMAGE_DECODE_H
#define STRATA_IMAGE_DECODE_H
#include <stddef.h>
#include <stdint.h>

/// Decodes a PNG or JPEG (chosen by signature) into straight-alpha RGBA, top row first, row
/// stride w*4. JPEGs are downscaled while decoding (1/2, 1/4 or 1/8) keeping both sides at
/// least `min_side`. Images larger than 16384 on a side or 64 Mpixel are refused.
/// Returns a malloc'ed buffer to free(), or NULL with a message in `err`.
uint8_t *imgdec_decode_rgba(const uint8_t *data, size_t len, int min_side, int *width, int *height, char *err, size_t err_len);

#endif
