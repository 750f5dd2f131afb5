package workload

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"sync"
)

// Image formats of the images feature (RequestFeature.Format).
const (
	ImagePNG  = "png"
	ImageJPEG = "jpeg"
)

// Bounds of the images feature.
const (
	// MaxImages bounds the images of one request (RequestFeature.Count).
	MaxImages = 16
	// MaxImageWidth and MaxImageHeight bound an image's size in pixels.
	MaxImageWidth  = 4096
	MaxImageHeight = 4096
	// MaxRequestImageBytes bounds the encoded image bytes of one
	// request (before base64), checked at load against the formats' worst
	// case (imageBound: no image made can be larger).
	MaxRequestImageBytes = 16 << 20
	// MaxImageDistinct bounds RequestFeature.Distinct, the pool of images
	// a feature reuses; MaxImagePoolBytes bounds the pool's encoded bytes
	// (worst case), which are kept for the plan's life.
	MaxImageDistinct  = 1024
	MaxImagePoolBytes = 256 << 20
)

// Image is one generated image, ready to send: its data URL
// ("data:image/png;base64,...") and its encoded size in bytes (before
// base64).
type Image struct {
	URL   string
	Bytes int
}

// imageBound is the most bytes an image of w×h pixels encodes to in
// either format: 3 bytes a pixel and a filter byte a row (PNG's raw RGB
// data; deflate stores incompressible blocks at 5 bytes per 64 KiB), with a
// margin of 1/64 and 1 KiB for headers. A JPEG at quality 90 of this
// content stays far below it.
func imageBound(w, h int) int64 {
	raw := int64(h) * (1 + 3*int64(w))
	return raw + raw/64 + 1024
}

// imageSet is a validated images feature.
type imageSet struct {
	count, width, height int
	format               string
	// distinct > 0: each image is drawn from a pool of that many, made
	// once and kept (pool, by image seed; at most distinct entries: a
	// plan drawn under another seed or nonce starts it again); 0: every
	// image of every request is its own.
	distinct int
	mu       sync.Mutex
	pool     map[uint64]Image
}

// newImageSet validates an images feature (at: its YAML path).
func newImageSet(f RequestFeature, at string) (*imageSet, error) {
	if f.Count < 1 || f.Count > MaxImages {
		return nil, fieldErr(at+".count", "must be in [1, %d], got %d", MaxImages, f.Count)
	}
	if f.Width < 1 || f.Width > MaxImageWidth {
		return nil, fieldErr(at+".width", "must be in [1, %d] pixels, got %d", MaxImageWidth, f.Width)
	}
	if f.Height < 1 || f.Height > MaxImageHeight {
		return nil, fieldErr(at+".height", "must be in [1, %d] pixels, got %d", MaxImageHeight, f.Height)
	}
	format := f.Format
	switch format {
	case "":
		format = ImagePNG
	case ImagePNG, ImageJPEG:
	case "jpg":
		format = ImageJPEG
	default:
		return nil, fieldErr(at+".format", "must be %s or %s, got %q", ImagePNG, ImageJPEG, f.Format)
	}
	one := imageBound(f.Width, f.Height)
	if total := int64(f.Count) * one; total > MaxRequestImageBytes {
		return nil, fieldErr(at, "%d images of %dx%d may encode to %d bytes a request, more than %d: fewer or smaller images",
			f.Count, f.Width, f.Height, total, MaxRequestImageBytes)
	}
	if f.Distinct < 0 || f.Distinct > MaxImageDistinct {
		return nil, fieldErr(at+".distinct", "must be in [0, %d] (0: every image its own), got %d", MaxImageDistinct, f.Distinct)
	}
	if pool := int64(f.Distinct) * one; pool > MaxImagePoolBytes {
		return nil, fieldErr(at+".distinct", "a pool of %d images of %dx%d may hold %d bytes, more than %d", f.Distinct, f.Width, f.Height, pool, MaxImagePoolBytes)
	}
	return &imageSet{count: f.Count, width: f.Width, height: f.Height, format: format, distinct: f.Distinct}, nil
}

// images returns the images of the request of item index: image k's seed
// is derive(seed, index, k) (every image of every request its own), or with
// a pool, one of Distinct seeds derive(seed, slot) drawn from (seed,
// index, k), made once and kept.
func (s *imageSet) images(seed uint64, index int64) []Image {
	out := make([]Image, s.count)
	for k := range out {
		if s.distinct == 0 {
			out[k] = s.make(derive(seed, tagImage, uint64(index), uint64(k)))
			continue
		}
		slot := derive(seed, tagImageSlot, uint64(index), uint64(k)) % uint64(s.distinct)
		is := derive(seed, tagImagePool, slot)
		s.mu.Lock()
		img, ok := s.pool[is]
		s.mu.Unlock()
		if !ok {
			img = s.make(is)
			s.mu.Lock()
			if s.pool == nil || len(s.pool) >= s.distinct {
				s.pool = make(map[uint64]Image, s.distinct)
			}
			s.pool[is] = img
			s.mu.Unlock()
		}
		out[k] = img
	}
	return out
}

// make draws and encodes the image of seed.
func (s *imageSet) make(seed uint64) Image {
	b := GenerateImage(seed, s.width, s.height, s.format)
	mime := "image/png"
	if s.format == ImageJPEG {
		mime = "image/jpeg"
	}
	return Image{URL: "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b), Bytes: len(b)}
}

// GenerateImage draws the image of seed (w×h pixels: a linear gradient
// between two colours and eight rectangles, all drawn from the seed) and
// encodes it with the standard library: PNG at the fastest compression or
// JPEG at quality 90. The same seed, size and format give the same bytes.
func GenerateImage(seed uint64, w, h int, format string) []byte {
	r := newRand(seed)
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	c0 := [3]float64{float64(r.IntN(256)), float64(r.IntN(256)), float64(r.IntN(256))}
	c1 := [3]float64{float64(r.IntN(256)), float64(r.IntN(256)), float64(r.IntN(256))}
	dx, dy := r.Float64()*2-1, r.Float64()*2-1
	span := absf(dx)*float64(w) + absf(dy)*float64(h) + 1
	off := 0.0
	if dx < 0 {
		off -= dx * float64(w)
	}
	if dy < 0 {
		off -= dy * float64(h)
	}
	for y := range h {
		row := img.Pix[y*img.Stride:]
		for x := range w {
			t := (dx*float64(x) + dy*float64(y) + off) / span
			i := 4 * x
			row[i] = uint8(c0[0] + (c1[0]-c0[0])*t)
			row[i+1] = uint8(c0[1] + (c1[1]-c0[1])*t)
			row[i+2] = uint8(c0[2] + (c1[2]-c0[2])*t)
			row[i+3] = 0xff
		}
	}
	for range 8 {
		x0, y0 := r.IntN(w), r.IntN(h)
		x1, y1 := x0+1+r.IntN(max(1, w/3)), y0+1+r.IntN(max(1, h/3))
		c := color.NRGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), 0xff}
		for y := y0; y < min(y1, h); y++ {
			for x := x0; x < min(x1, w); x++ {
				img.SetNRGBA(x, y, c)
			}
		}
	}
	var buf bytes.Buffer
	var err error
	if format == ImageJPEG {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
	} else {
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
	}
	if err != nil {
		// Encoding to memory fails only on an invalid size, which
		// newImageSet refused.
		panic(fmt.Sprintf("workload: encoding a %dx%d %s image: %v", w, h, format, err))
	}
	return buf.Bytes()
}

func absf(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
