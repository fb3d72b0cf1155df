package admin

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLoopbackOnlyRefusesOtherHosts(t *testing.T) {
	h := LoopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for addr, want := range map[string]int{"127.0.0.1:5000": 200, "[::1]:5000": 200, "192.0.2.7:5000": 403, "garbage": 403} {
		r := httptest.NewRequest(http.MethodGet, StatusPath, nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("from %s: %d, want %d", addr, w.Code, want)
		}
	}
}
