package relay

import (
	"encoding/json"
	"image/png"
	"net/http"
	"testing"
)

func TestG01N5_GeneratedIconIsAdvertisedAndServed(t *testing.T) {
	tr := startRelay(t, Options{Name: "t"})
	req, _ := http.NewRequest("GET", tr.base+"/", nil)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if doc["icon"] != tr.base+"/icon.png" {
		t.Fatalf("icon %v, want %s/icon.png", doc["icon"], tr.base)
	}
	resp, err = http.Get(tr.base + "/icon.png")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("icon response %d %v", resp.StatusCode, resp.Header)
	}
	img, err := png.Decode(resp.Body)
	if err != nil || img.Bounds().Dx() != 64 {
		t.Fatalf("icon is not a 64px PNG: %v", err)
	}
}
