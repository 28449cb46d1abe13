package gateway

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// badInput is the answer to a request grpc-gateway could not read, with the
// reason every error of jetgate's carries: a body that does not parse
// (MALFORMED_BODY), or query parameters that do not (INVALID_ARGUMENT). A
// query parameter that is not of its field's type is named as the caller
// wrote it, with the value sent, rather than in Go's words ("strconv.ParseInt:
// parsing …", a reviewer's finding).
func badInput(r *http.Request, err error) (_ *status.Status, reason string, ok bool) {
	st := status.Convert(err)
	switch {
	case malformedBody(r):
		return st, "MALFORMED_BODY", true
	case st.Code() != codes.InvalidArgument || hasJetgateInfo(st):
		return nil, "", false
	}
	if field, ok := repeatedField(st.Message()); ok {
		if st := repeated(r, field); st != nil {
			return st, "INVALID_ARGUMENT", true
		}
	}
	field, ok := parsedField(st.Message())
	if !ok {
		return st, "INVALID_ARGUMENT", true
	}
	key, value := field, ""
	for k, vs := range r.URL.Query() {
		if sameField(k, field) && len(vs) > 0 {
			key, value = k, vs[0]
			break
		}
	}
	return status.Newf(codes.InvalidArgument, "query parameter %s: %q is not a valid value for it (GET /openapi.json gives its type)", key, cut(value, 64)),
		"INVALID_ARGUMENT", true
}

// parsedField is the field named by grpc-gateway's `parsing field "x": …`.
func parsedField(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, `parsing field "`)
	if !ok {
		return "", false
	}
	field, _, ok := strings.Cut(rest, `"`)
	return field, ok && field != ""
}

// repeatedField is the field named by grpc-gateway's answer to a query
// parameter given more than once: `too many values for field "x": …`, or
// `duplicate field "x"` for both of its spellings.
func repeatedField(msg string) (string, bool) {
	for _, prefix := range []string{`too many values for field "`, `duplicate field "`} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			field, _, ok := strings.Cut(rest, `"`)
			return field, ok && field != ""
		}
	}
	return "", false
}

// repeated names a parameter given more than once as the caller first
// wrote it, with every value sent for it, in the query's order; nil when
// the query does not show it so.
func repeated(r *http.Request, field string) *status.Status {
	var key string
	var values []string
	for kv := range strings.SplitSeq(r.URL.RawQuery, "&") {
		k, v, _ := strings.Cut(kv, "=")
		k, errK := url.QueryUnescape(k)
		v, errV := url.QueryUnescape(v)
		if errK != nil || errV != nil || !sameField(k, field) {
			continue
		}
		if key == "" {
			key = k
		}
		values = append(values, strconv.Quote(cut(v, 64)))
	}
	if len(values) < 2 {
		return nil
	}
	return status.Newf(codes.InvalidArgument, "query parameter %s: give it once, not %d times (%s)", cut(key, 64), len(values), strings.Join(values, ", "))
}

// sameField reports whether the query key names the proto field: by its own
// name (page_size) or its JSON name (pageSize).
func sameField(key, field string) bool {
	fold := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	return fold(key) == fold(field)
}

// hasJetgateInfo reports whether st carries jetgate's own ErrorInfo: an
// answer of jetgate's, not grpc-gateway's.
func hasJetgateInfo(st *status.Status) bool {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == "jetgate" {
			return true
		}
	}
	return false
}
