#include "image_decode.h"
#include "library_loader.h"
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

/* ---- The libraries, opened on first use ---------------------------------------------------- */

#define RESOLVE(lib, table, name) strata_library_resolve(&(lib), (void **)&(table).name, #name)

static struct strata_library png_lib = STRATA_LIBRARY("libpng16.so.16", NULL);
static struct {
    int (*png_image_begin_read_from_memory)(png_imagep, png_const_voidp, size_t);
    int (*png_image_finish_read)(png_imagep, png_const_colorp, void *, png_int_32, void *);
    void (*png_image_free)(png_imagep);
} png;

static void load_png(void) {
    strata_library_open(&png_lib, NULL);
    RESOLVE(png_lib, png, png_image_begin_read_from_memory);
    RESOLVE(png_lib, png, png_image_finish_read);
    RESOLVE(png_lib, png, png_image_free);
}

static struct strata_library jpeg_lib = STRATA_LIBRARY("libjpeg.so.62", NULL);
static struct {
    struct jpeg_error_mgr *(*jpeg_std_error)(struct jpeg_error_mgr *);
    void (*jpeg_CreateDecompress)(j_decompress_ptr, int, size_t);
    void (*jpeg_mem_src)(j_decompress_ptr, const unsigned char *, unsigned long);
    int (*jpeg_read_header)(j_decompress_ptr, boolean);
    boolean (*jpeg_start_decompress)(j_decompress_ptr);
    JDIMENSION (*jpeg_read_scanlines)(j_decompress_ptr, JSAMPARRAY, JDIMENSION);
    boolean (*jpeg_finish_decompress)(j_decompress_ptr);
    void (*jpeg_destroy_decompress)(j_decompress_ptr);
} jpeg;

static void load_jpeg(void) {
    strata_library_open(&jpeg_lib, NULL);
    RESOLVE(jpeg_lib, jpeg, jpeg_std_error);
    RESOLVE(jpeg_lib, jpeg, jpeg_CreateDecompress);
    RESOLVE(jpeg_lib, jpeg, jpeg_mem_src);
    RESOLVE(jpeg_lib, jpeg, jpeg_read_header);
    RESOLVE(jpeg_lib, jpeg, jpeg_start_decompress);
    RESOLVE(jpeg_lib, jpeg, jpeg_read_scanlines);
    RESOLVE(jpeg_lib, jpeg, jpeg_finish_decompress);
    RESOLVE(jpeg_lib, jpeg, jpeg_destroy_decompress);
}

/* chafa 1.x (libchafa.so.0), declared here so its headers (and glib's) are not needed to build.
   The values are those of chafa's public enums, which its soname keeps stable. */
typedef struct ChafaCanvasConfig ChafaCanvasConfig;
typedef struct ChafaSymbolMap ChafaSymbolMap;
typedef struct ChafaCanvas ChafaCanvas;
typedef struct { char *str; size_t len; size_t allocated_len; } GString;  /* glib's GString */
enum {
    CHAFA_CANVAS_MODE_TRUECOLOR = 0, CHAFA_CANVAS_MODE_INDEXED_240 = 2, CHAFA_CANVAS_MODE_INDEXED_16 = 3,
    CHAFA_PIXEL_MODE_SYMBOLS = 0,
    CHAFA_OPTIMIZATION_REUSE_ATTRIBUTES = 1 << 0,
    CHAFA_SYMBOL_TAG_SPACE = 1 << 0, CHAFA_SYMBOL_TAG_SOLID = 1 << 1, CHAFA_SYMBOL_TAG_BLOCK = 1 << 3,
    CHAFA_SYMBOL_TAG_HALF = (1 << 8) | (1 << 9),
    CHAFA_PIXEL_RGBA8_UNASSOCIATED = 4,
};

static struct strata_library chafa_lib = STRATA_LIBRARY("libchafa.so.0", NULL);
static struct {
    void (*chafa_calc_canvas_geometry)(int, int, int *, int *, float, int, int);
    ChafaCanvasConfig *(*chafa_canvas_config_new)(void);
    void (*chafa_canvas_config_unref)(ChafaCanvasConfig *);
    void (*chafa_canvas_config_set_geometry)(ChafaCanvasConfig *, int, int);
    void (*chafa_canvas_config_set_canvas_mode)(ChafaCanvasConfig *, int);
    void (*chafa_canvas_config_set_pixel_mode)(ChafaCanvasConfig *, int);
    void (*chafa_canvas_config_set_optimizations)(ChafaCanvasConfig *, int);
    void (*chafa_canvas_config_set_symbol_map)(ChafaCanvasConfig *, const ChafaSymbolMap *);
    ChafaSymbolMap *(*chafa_symbol_map_new)(void);
    void (*chafa_symbol_map_unref)(ChafaSymbolMap *);
    void (*chafa_symbol_map_add_by_tags)(ChafaSymbolMap *, int);
    ChafaCanvas *(*chafa_canvas_new)(const ChafaCanvasConfig *);
    void (*chafa_canvas_unref)(ChafaCanvas *);
    void (*chafa_canvas_draw_all_pixels)(ChafaCanvas *, int, const uint8_t *, int, int, int);
    GString *(*chafa_canvas_print)(ChafaCanvas *, void *);
    char *(*g_string_free)(GString *, int);  /* from glib, which libchafa loads */
} chafa;

static void load_chafa(void) {
    strata_library_open(&chafa_lib, NULL);
    RESOLVE(chafa_lib, chafa, chafa_calc_canvas_geometry);
    RESOLVE(chafa_lib, chafa, chafa_canvas_config_new);
    RESOLVE(chafa_lib, chafa, chafa_canvas_config_unref);
    RESOLVE(chafa_lib, chafa, chafa_canvas_config_set_geometry);
    RESOLVE(chafa_lib, chafa, chafa_canvas_config_set_canvas_mode);
    RESOLVE(chafa_lib, chafa, chafa_canvas_config_set_pixel_mode);
    RESOLVE(chafa_lib, chafa, chafa_canvas_config_set_optimizations);
    RESOLVE(chafa_lib, chafa, chafa_canvas_config_set_symbol_map);
    RESOLVE(chafa_lib, chafa, chafa_symbol_map_new);
    RESOLVE(chafa_lib, chafa, chafa_symbol_map_unref);
    RESOLVE(chafa_lib, chafa, chafa_symbol_map_add_by_tags);
    RESOLVE(chafa_lib, chafa, chafa_canvas_new);
    RESOLVE(chafa_lib, chafa, chafa_canvas_unref);
    RESOLVE(chafa_lib, chafa, chafa_canvas_draw_all_pixels);
    RESOLVE(chafa_lib, chafa, chafa_canvas_print);
    RESOLVE(chafa_lib, chafa, g_string_free);
}

/* Opens `lib` once (with `load`); NULL when it is usable, else a message already in `err`. */
static const char *need(struct strata_library *lib, void (*load)(void), char *err, size_t err_len) {
    const char *problem = strata_library_load(lib, load);
    if (problem) set_err(err, err_len, problem);
    return problem;
}

/* ---- Decoding ------------------------------------------------------------------------------- */
static uint8_t *decode_png(const uint8_t *data, size_t len, int *w, int *h, char *err, size_t err_len) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png.png_image_begin_read_from_memory(&image, data, len)) { set_err(err, err_len, image.message); return NULL; }
    if (image.width == 0 || image.height == 0 || image.width > MAX_SIDE || image.height > MAX_SIDE ||
        (size_t)image.width * image.height > MAX_PIXELS) {
        png.png_image_free(&image); set_err(err, err_len, "image too large"); return NULL;
    }
    image.format = PNG_FORMAT_RGBA;
    uint8_t *px = malloc(PNG_IMAGE_SIZE(image));
    if (!px) { png.png_image_free(&image); set_err(err, err_len, "out of memory"); return NULL; }
    if (!png.png_image_finish_read(&image, NULL, px, 0, NULL)) {
        set_err(err, err_len, image.message); free(px); png.png_image_free(&image); return NULL;
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
    cinfo.err = jpeg.jpeg_std_error(&jerr.mgr);
    jerr.mgr.error_exit = jpeg_fail;
    jerr.mgr.output_message = jpeg_quiet;
    if (setjmp(jerr.jump)) {
        set_err(err, err_len, jerr.message);
        jpeg.jpeg_destroy_decompress(&cinfo);
        free(px);
        return NULL;
    }
    jpeg.jpeg_CreateDecompress(&cinfo, JPEG_LIB_VERSION, sizeof(struct jpeg_decompress_struct));
    jpeg.jpeg_mem_src(&cinfo, data, (unsigned long)len);
    jpeg.jpeg_read_header(&cinfo, TRUE);
    if (cinfo.image_width > MAX_SIDE || cinfo.image_height > MAX_SIDE ||
        (size_t)cinfo.image_width * cinfo.image_height > MAX_PIXELS) {
        set_err(err, err_len, "image too large"); jpeg.jpeg_destroy_decompress(&cinfo); return NULL;
    }
    cinfo.out_color_space = JCS_EXT_RGBA;
    unsigned denom = 1;
    while (denom < 8 && min_side > 0 && cinfo.image_width / (denom * 2) >= (unsigned)min_side &&
           cinfo.image_height / (denom * 2) >= (unsigned)min_side) denom *= 2;
    cinfo.scale_num = 1;
    cinfo.scale_denom = denom;
    jpeg.jpeg_start_decompress(&cinfo);
    size_t stride = (size_t)cinfo.output_width * 4;
    px = malloc(stride * cinfo.output_height);
    if (!px) { set_err(err, err_len, "out of memory"); jpeg.jpeg_destroy_decompress(&cinfo); return NULL; }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = px + stride * cinfo.output_scanline;
        jpeg.jpeg_read_scanlines(&cinfo, &row, 1);
    }
    *w = (int)cinfo.output_width; *h = (int)cinfo.output_height;
    jpeg.jpeg_finish_decompress(&cinfo);
    jpeg.jpeg_destroy_decompress(&cinfo);
    return px;
}

uint8_t *imgdec_decode_rgba(const uint8_t *data, size_t len, int min_side, int *width, int *height, char *err, size_t err_len) {
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len >= 8 && memcmp(data, png_sig, 8) == 0) {
        if (need(&png_lib, load_png, err, err_len)) return NULL;
        return decode_png(data, len, width, height, err, err_len);
    }
    if (len >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
        if (need(&jpeg_lib, load_jpeg, err, err_len)) return NULL;
        return decode_jpeg(data, len, min_side, width, height, err, err_len);
    }
    set_err(err, err_len, "not a PNG or JPEG");
    return NULL;
}

/* ---- Drawing -------------------------------------------------------------------------------- */

char *imgdec_draw_symbols(const uint8_t *rgba, int width, int height, int *columns, int *rows, enum imgdec_colors colors,
                          char *err, size_t err_len) {
    if (need(&chafa_lib, load_chafa, err, err_len)) return NULL;
    chafa.chafa_calc_canvas_geometry(width, height, columns, rows, 0.5f, 1, 0);
    if (*columns <= 0 || *rows <= 0) { set_err(err, err_len, "nothing to draw"); return NULL; }
    ChafaCanvasConfig *config = chafa.chafa_canvas_config_new();
    chafa.chafa_canvas_config_set_geometry(config, *columns, *rows);
    int mode = colors == IMGDEC_TRUECOLOR ? CHAFA_CANVAS_MODE_TRUECOLOR
             : colors == IMGDEC_INDEXED_240 ? CHAFA_CANVAS_MODE_INDEXED_240 : CHAFA_CANVAS_MODE_INDEXED_16;
    chafa.chafa_canvas_config_set_canvas_mode(config, mode);
    chafa.chafa_canvas_config_set_pixel_mode(config, CHAFA_PIXEL_MODE_SYMBOLS);
    chafa.chafa_canvas_config_set_optimizations(config, CHAFA_OPTIMIZATION_REUSE_ATTRIBUTES);
    ChafaSymbolMap *map = chafa.chafa_symbol_map_new();
    chafa.chafa_symbol_map_add_by_tags(map, CHAFA_SYMBOL_TAG_BLOCK | CHAFA_SYMBOL_TAG_HALF | CHAFA_SYMBOL_TAG_SPACE | CHAFA_SYMBOL_TAG_SOLID);
    chafa.chafa_canvas_config_set_symbol_map(config, map);
    ChafaCanvas *canvas = chafa.chafa_canvas_new(config);
    char *text = NULL;
    if (canvas) {
        chafa.chafa_canvas_draw_all_pixels(canvas, CHAFA_PIXEL_RGBA8_UNASSOCIATED, rgba, width, height, width * 4);
        GString *printed = chafa.chafa_canvas_print(canvas, NULL);
        if (printed) {
            text = malloc(printed->len + 1);
            if (text) { memcpy(text, printed->str, printed->len); text[printed->len] = 0; }
            chafa.g_string_free(printed, 1);
        }
        chafa.chafa_canvas_unref(canvas);
    }
    chafa.chafa_symbol_map_unref(map);
    chafa.chafa_canvas_config_unref(config);
    if (!text) set_err(err, err_len, canvas ? "chafa printed nothing" : "chafa made no canvas");
    return text;
}
