// Package console holds the operator console's built files (dist/, made by
// `npm run build` from src/ and committed; console/ci.sh checks they are
// fresh). The gateway serves them at /console (DESIGN section 16).
package console

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Files are the built console: index.html and assets/.
func Files() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid path, embedded above
	}
	return sub
}
