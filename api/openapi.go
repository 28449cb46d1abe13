// Package api holds the code and OpenAPI document generated from proto/.
// Everything here but this file is generated: regenerate with
// scripts/generate, never edit by hand.
package api

import _ "embed"

// OpenAPI is the OpenAPI v2 document of the REST API.
//
//go:embed jetgate.swagger.json
var OpenAPI []byte
