#include "image_decode.h"
#include <png.h>
#include <stdio.h>
#include <jpeglib.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIDE 16384
#define MAX_PIXELS (64u * 1024u * 1024u)

static void set_err(char *err, size_t len, const char *msg) {
    if (err && len) { strncpy(err, msg, len - 1); err[len - 1] = 0; }
}

static uint8_t *decode_png(const uint8_t *data, size_t len, int *w, int *h, char *err, size_t err_len) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, len)) { set_err(err, err_len, image.message); return NULL; }
    if (image.width == 0 || image.height == 0 || image.width > MAX_SIDE || image.height > MAX_SIDE ||
        (size_t)image.width * image.height > MAX_PIXELS) {
        png_image_free(&image); set_err(err, err_len, "image too large"); return NULL;
    }
    image.format = PNG_FORMAT_RGBA;
    uint8_t *px = malloc(PNG_IMAGE_SIZE(image));
    if (!px) { png_image_free(&image); set_err(err, err_len, "out of memory"); return NULL; }
    if (!png_image_finish_read(&image, NULL, px, 0, NULL)) {
        set_err(err, err_len, image.message); free(px); png_image_free(&image); return NULL;
    }
    *w = (int)image.width; *h = (int)image.height;
    return px;
}

struct jerr { struct jpeg_error_mgr mgr; jmp_buf jump; char message[JMSG_LENGTH_MAX]; };

static void jpeg_fail(j_common_ptr cinfo) {
    struct jerr *e = (struct jerr *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, e->message);
    longjmp(e->jump, 1);
}

static void jpeg_quiet(j_common_ptr cinfo) { (void)cinfo; }

static uint8_t *decode_jpeg(const uint8_t *data, size_t len, int min_side, int *w, int *h, char *err, size_t err_len) {
    struct jpeg_decompress_struct cinfo;
    struct jerr jerr;
    uint8_t *volatile px = NULL;
    cinfo.err = jpeg_std_error(&jerr.mgr);
    jerr.mgr.error_exit = jpeg_fail;
    jerr.mgr.output_message = jpeg_quiet;
    if (setjmp(jerr.jump)) {
        set_err(err, err_len, jerr.message);
        jpeg_destroy_decompress(&cinfo);
        free(px);
        return NULL;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)len);
    jpeg_read_header(&cinfo, TRUE);
    if (cinfo.image_width > MAX_SIDE || cinfo.image_height > MAX_SIDE ||
        (size_t)cinfo.image_width * cinfo.image_height > MAX_PIXELS) {
        set_err(err, err_len, "image too large"); jpeg_destroy_decompress(&cinfo); return NULL;
    }
    cinfo.out_color_space = JCS_EXT_RGBA;
    unsigned denom = 1;
    while (denom < 8 && min_side > 0 && cinfo.image_width / (denom * 2) >= (unsigned)min_side &&
           cinfo.image_height / (denom * 2) >= (unsigned)min_side) denom *= 2;
    cinfo.scale_num = 1;
    cinfo.scale_denom = denom;
    jpeg_start_decompress(&cinfo);
    size_t stride = (size_t)cinfo.output_width * 4;
    px = malloc(stride * cinfo.output_height);
    if (!px) { set_err(err, err_len, "out of memory"); jpeg_destroy_decompress(&cinfo); return NULL; }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = px + stride * cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    *w = (int)cinfo.output_width; *h = (int)cinfo.output_height;
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return px;
}

uint8_t *imgdec_decode_rgba(const uint8_t *data, size_t len, int min_side, int *width, int *height, char *err, size_t err_len) {
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len >= 8 && memcmp(data, png_sig, 8) == 0) return decode_png(data, len, width, height, err, err_len);
    if (len >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) return decode_jpeg(data, len, min_side, width, height, err, err_len);
    set_err(err, err_len, "not a PNG or JPEG");
    return NULL;
}
