package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"sync"
)

// favicon is /favicon.ico: a 32×32 icon (an ICO file holding one PNG, which
// every browser and feed reader that fetches favicons reads), drawn here so
// the repository holds no binary. Feed readers fetch it once per feed; without
// it they got a 404 problem on every refresh.
var favicon = sync.OnceValues(func() ([]byte, string) {
	const n = 32
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	brand := color.NRGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}
	white := color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			c := brand
			// A feed-like mark: a dot and two quarter rings at the lower left.
			dx, dy := x-8, n-8-y
			d2 := dx*dx + dy*dy
			if dx >= -3 && dy >= -3 && (d2 <= 9 || (d2 >= 100 && d2 <= 169) || (d2 >= 324 && d2 <= 441)) {
				c = white
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var pngBuf bytes.Buffer
	_ = png.Encode(&pngBuf, img) // writing to memory cannot fail
	var ico bytes.Buffer
	// ICONDIR: reserved, type 1 (icon), one image.
	_ = binary.Write(&ico, binary.LittleEndian, [3]uint16{0, 1, 1})
	// ICONDIRENTRY: width, height, colours, reserved, planes, bpp, size, offset.
	ico.Write([]byte{n, n, 0, 0})
	_ = binary.Write(&ico, binary.LittleEndian, [2]uint16{1, 32})
	_ = binary.Write(&ico, binary.LittleEndian, [2]uint32{uint32(pngBuf.Len()), 6 + 16})
	ico.Write(pngBuf.Bytes())
	sum := sha256.Sum256(ico.Bytes())
	return ico.Bytes(), hex.EncodeToString(sum[:])[:12]
})

func serveFavicon(w http.ResponseWriter, r *http.Request) {
	body, version := favicon()
	w.Header().Set("Content-Type", "image/x-icon")
	serveAsset(w, r, "favicon.ico", body, version, false)
}
