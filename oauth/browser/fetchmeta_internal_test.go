package browser

import (
	"net/http"
	"testing"
)

// TestCrossSiteHeaderOnly: CrossSite reads headers only and accepts what
// a same-origin browser or a non-browser client sends.
func TestCrossSiteHeaderOnly(t *testing.T) {
	h := &Handler{origin: "https://signd.example"}
	for _, tt := range []struct {
		h    http.Header
		want bool // refused
	}{
		{http.Header{}, false},
		{http.Header{"Origin": {"https://signd.example"}, "Sec-Fetch-Site": {"same-origin"}}, false},
		{http.Header{"Sec-Fetch-Site": {"none"}}, false},
		{http.Header{"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, true},
		{http.Header{"Origin": {"null"}}, true},
		{http.Header{"Sec-Fetch-Site": {""}}, true},
	} {
		if got := h.CrossSite(tt.h) != ""; got != tt.want {
			t.Errorf("crossSite(%v) refused %v, want %v", tt.h, got, tt.want)
		}
	}
}
