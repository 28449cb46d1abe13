package gateway

import (
	"net/http"
	"strings"

	"github.com/jetgate/jetgate/console"
)

// consoleCSP is the console's Content-Security-Policy: its own scripts and
// styles only (no inline ones), API calls to its own origin only, no
// framing, no forms posted anywhere.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// consoleHandler serves the operator console's static files under
// /console/ to anyone: the page holds no data. Every API call it makes
// carries the credentials its user typed in, and goes through the same
// authentication and grants as any caller's.
func consoleHandler() http.Handler {
	files := http.FileServerFS(console.Files())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		path := strings.TrimPrefix(r.URL.Path, "/console")
		if path == "" {
			http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
			return
		}
		if strings.HasPrefix(path, "/assets/") {
			h.Set("Cache-Control", "public, max-age=31536000, immutable") // names carry a hash of their content
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = path
		files.ServeHTTP(w, r2)
	})
}
