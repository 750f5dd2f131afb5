package simulator

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"sync"
)

// Images in chat messages: image_url content parts whose url is a base64
// data URL of a PNG or JPEG image (docs/simulator.md, "Images"). An image
// counts as imageTokens(w, h) prompt tokens, spelled as vocabulary words
// drawn from the hash of its bytes, so the same image gives the same tokens
// (a prefix-cache hit, as vLLM's multimodal hashes give) and another image
// other tokens. The multimodal cache counters (vllm:mm_cache_queries_total,
// vllm:mm_cache_hits_total) count the images looked up and found among the
// last mmCacheEntries seen.

const (
	// imagePatch is the pixels of one image token on each side: an image
	// of w×h pixels counts as ceil(w/28)·ceil(h/28) tokens (Qwen2-VL's
	// 14-pixel patches merged 2×2, without its resizing).
	imagePatch = 28
	// maxImageBytes bounds one decoded image, maxImagesPerRequest the
	// images of one request, maxImageSide an image's width and height.
	maxImageBytes       = 16 << 20
	maxImagesPerRequest = 64
	maxImageSide        = 8192
	// mmCacheEntries bounds the multimodal cache (images by hash, least
	// recently used first out).
	mmCacheEntries = 1024
)

var (
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
	jpegMagic = []byte{0xff, 0xd8, 0xff}
)

// chatImage is one image of a request: its hash and size.
type chatImage struct {
	hash          [32]byte
	width, height int
}

// imageTokens is the prompt tokens of an image of w×h pixels.
func imageTokens(w, h int) int {
	return ((w + imagePatch - 1) / imagePatch) * ((h + imagePatch - 1) / imagePatch)
}

// words spells the image's tokens: imageTokens of vocabulary words drawn
// from its hash.
func (im chatImage) words(b *strings.Builder) {
	seed := binary.LittleEndian.Uint64(im.hash[:8])
	for j := range imageTokens(im.width, im.height) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		x := seed + uint64(j)*0x9e3779b97f4a7c15
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		x = (x ^ (x >> 27)) * 0x94d049bb133111eb
		b.WriteString(vocabWord(int((x ^ (x >> 31)) % VocabSize)))
	}
}

// decodeImageURL checks an image_url part's url: a data URL with base64 of
// a PNG or JPEG image of at most maxImageBytes whose header says its size.
func decodeImageURL(url string) (chatImage, error) {
	meta, data, ok := strings.Cut(url, ",")
	if !ok || !strings.HasPrefix(meta, "data:") {
		return chatImage{}, fmt.Errorf("image_url.url must be a data URL (data:image/png;base64,...): the simulator fetches no URL")
	}
	if !strings.HasSuffix(meta, ";base64") {
		return chatImage{}, fmt.Errorf("image_url.url must be a base64 data URL (data:image/png;base64,...), got %q", truncate(meta, 64))
	}
	if base64.StdEncoding.DecodedLen(len(data)) > maxImageBytes+2 {
		return chatImage{}, fmt.Errorf("image of more than %d bytes", maxImageBytes)
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return chatImage{}, fmt.Errorf("image_url.url: invalid base64: %v", err)
	}
	if len(b) > maxImageBytes {
		return chatImage{}, fmt.Errorf("image of %d bytes, more than %d", len(b), maxImageBytes)
	}
	var cfg image.Config
	switch {
	case bytes.HasPrefix(b, pngMagic):
		cfg, err = png.DecodeConfig(bytes.NewReader(b))
	case bytes.HasPrefix(b, jpegMagic):
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
	default:
		return chatImage{}, fmt.Errorf("image is neither PNG nor JPEG (its first bytes are %q)", truncate(string(b), 8))
	}
	if err != nil {
		return chatImage{}, fmt.Errorf("malformed image: %v", err)
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > maxImageSide || cfg.Height > maxImageSide {
		return chatImage{}, fmt.Errorf("image of %dx%d pixels: each side must be 1 to %d", cfg.Width, cfg.Height, maxImageSide)
	}
	return chatImage{hash: sha256.Sum256(b), width: cfg.Width, height: cfg.Height}, nil
}

// partImageURL returns the url of an image part: chat's image_url is
// {"url": ...}, the Responses API's input_image has the url as a string.
func partImageURL(typ string, raw json.RawMessage) (string, error) {
	if typ == "input_image" {
		var url string
		if json.Unmarshal(raw, &url) != nil || url == "" {
			return "", fmt.Errorf(`an input_image part needs "image_url": "data:..."`)
		}
		return url, nil
	}
	var v struct {
		URL *string `json:"url"`
	}
	if json.Unmarshal(raw, &v) != nil || v.URL == nil {
		return "", fmt.Errorf(`an image_url part needs "image_url": {"url": ...}`)
	}
	return *v.URL, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// mmCache is the multimodal cache: the hashes of the last mmCacheEntries
// images seen. Safe for concurrent use.
type mmCache struct {
	mu    sync.Mutex
	order *list.List // of [32]byte, most recent first
	index map[[32]byte]*list.Element
}

// lookup counts the images of a request in the multimodal cache counters
// and adds them to the cache.
func (s *Simulator) lookupImages(images []chatImage) {
	if len(images) == 0 {
		return
	}
	c := &s.mm
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.order == nil {
		c.order, c.index = list.New(), make(map[[32]byte]*list.Element)
	}
	for _, im := range images {
		s.m.mmQueries.Inc()
		if e, ok := c.index[im.hash]; ok {
			s.m.mmHits.Inc()
			c.order.MoveToFront(e)
			continue
		}
		c.index[im.hash] = c.order.PushFront(im.hash)
		if c.order.Len() > mmCacheEntries {
			last := c.order.Back()
			delete(c.index, last.Value.([32]byte))
			c.order.Remove(last)
		}
	}
}
