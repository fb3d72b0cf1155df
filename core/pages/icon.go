package pages

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"sync"
)

// The NIP-11 document advertises an icon; without one configured, the
// server draws its own: a git-style branch (two commits on a trunk and one
// on a branch) in the nostr purple. It is generated, not shipped, so the
// binary carries no binary assets.
var (
	iconOnce sync.Once
	iconPNG  []byte
)

func icon() []byte {
	iconOnce.Do(func() {
		const n = 64
		img := image.NewNRGBA(image.Rect(0, 0, n, n))
		bg := color.NRGBA{0x66, 0x2d, 0x91, 0xff}
		fg := color.NRGBA{0xff, 0xff, 0xff, 0xff}
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				img.Set(x, y, bg)
			}
		}
		disc := func(cx, cy, r int) {
			for y := cy - r; y <= cy+r; y++ {
				for x := cx - r; x <= cx+r; x++ {
					if (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r {
						img.Set(x, y, fg)
					}
				}
			}
		}
		line := func(x0, y0, x1, y1 int) {
			steps := max(abs(x1-x0), abs(y1-y0))
			for i := 0; i <= steps; i++ {
				x := x0 + (x1-x0)*i/steps
				y := y0 + (y1-y0)*i/steps
				disc(x, y, 2)
			}
		}
		line(20, 12, 20, 52)
		line(20, 30, 44, 20)
		disc(20, 12, 6)
		disc(20, 52, 6)
		disc(44, 20, 6)
		var buf bytes.Buffer
		png.Encode(&buf, img)
		iconPNG = buf.Bytes()
	})
	return iconPNG
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func serveIcon(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	if r.Method == http.MethodHead {
		return
	}
	w.Write(icon())
}
