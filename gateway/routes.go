package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// route is one path of the API, as the OpenAPI document has it:
// "/v1/streams/{stream}/consumers/{consumer}:fetch" is the segments "v1",
// "streams", "{stream}", "consumers", "{consumer}" and the verb "fetch".
type route struct {
	path    string // as the OpenAPI document has it
	segs    []string
	verb    string
	methods []string
	query   map[string][]string // by method: the query parameters it takes
	rpc     map[string]string   // by method: the RPC it calls ("Fetch")
}

// routeTable knows which methods each path of the API takes, so that a
// request grpc-gateway's mux would answer badly gets a plain answer: a path
// asked with a method it does not take is 405 with Allow (the mux says 501),
// and a custom verb the API does not have is 404 (the mux says 501, or for a
// GET reads "billing:foo" as a consumer's name).
type routeTable []route

// loadRoutes reads the paths of the generated OpenAPI document, so that the
// table is the API's own and cannot drift from it.
func loadRoutes(openAPI []byte) (routeTable, error) {
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string                      `json:"operationId"`
			Parameters  []struct{ Name, In string } `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	var rt routeTable
	for path, ops := range doc.Paths {
		r := route{path: path, segs: strings.Split(strings.TrimPrefix(path, "/"), "/")}
		last := &r.segs[len(r.segs)-1]
		if i := strings.LastIndex(*last, "}:"); i >= 0 {
			*last, r.verb = (*last)[:i+1], (*last)[i+2:]
		}
		r.query, r.rpc = make(map[string][]string, len(ops)), make(map[string]string, len(ops))
		for m, op := range ops {
			m = strings.ToUpper(m)
			r.methods = append(r.methods, m)
			_, r.rpc[m], _ = strings.Cut(op.OperationID, "_") // ConsumerService_Fetch
			r.query[m] = []string{}
			for _, p := range op.Parameters {
				if p.In == "query" {
					r.query[m] = append(r.query[m], p.Name)
				}
			}
		}
		slices.Sort(r.methods)
		rt = append(rt, r)
	}
	if len(rt) == 0 {
		return nil, fmt.Errorf("the OpenAPI document has no paths")
	}
	return rt, nil
}

// allowed is what the table says of a path: the methods it takes, whether
// its last segment names a verb the API has there, and the query parameters
// method takes there. A path no route matches takes no method.
func (rt routeTable) allowed(path, method string) (methods []string, knownVerb bool, query []string) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var plain, plainQuery []string
	for _, r := range rt {
		if len(r.segs) != len(segs) || !r.matches(segs) {
			continue
		}
		q, ok := r.query[method]
		if r.verb == "" {
			plain = append(plain, r.methods...)
			if ok {
				plainQuery = q
			}
		} else {
			methods = append(methods, r.methods...)
			if ok {
				query = q
			}
		}
	}
	if len(methods) > 0 {
		return methods, true, query
	}
	return plain, false, plainQuery
}

// rpc is the RPC a request of method on path calls; "" where it calls none.
func (rt routeTable) rpc(path, method string) string {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if r := rt.calls(path); r != nil {
		return r.rpc[method]
	}
	return ""
}

// template is the route a request of method on path calls, as the OpenAPI
// document names it ("/v1/streams/{stream}/consumers/{consumer}:fetch");
// "" where it calls none.
func (rt routeTable) template(path, method string) string {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if r := rt.calls(path); r != nil && r.rpc[method] != "" {
		return r.path
	}
	return ""
}

// calls is the route a request on path is for, read as allowed reads the
// path (a verb's route first); nil where none matches.
func (rt routeTable) calls(path string) *route {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var plain *route
	for i, r := range rt {
		switch {
		case len(r.segs) != len(segs) || !r.matches(segs):
		case r.verb != "":
			return &rt[i]
		default:
			plain = &rt[i]
		}
	}
	return plain
}

// unknownQuery is INVALID_ARGUMENT naming the first query parameter of q
// that is not among those the route takes (by their JSON names or their
// proto names): grpc-gateway ignores one, so a caller who put a field in the
// query (":fetch?batch=10") got the defaults without a word.
func unknownQuery(method, path string, q url.Values, takes []string) *status.Status {
	for k := range q {
		if slices.ContainsFunc(takes, func(t string) bool { return sameField(k, t) }) {
			continue
		}
		if len(takes) == 0 {
			return status.Newf(codes.InvalidArgument, "query parameter %q: %s %s takes none; send the request's fields in its JSON body (GET /openapi.json has them)",
				cut(k, 64), method, cut(path, 200))
		}
		return status.Newf(codes.InvalidArgument, "query parameter %q: %s %s takes only %s", cut(k, 64), method, cut(path, 200), strings.Join(takes, ", "))
	}
	return nil
}

func (r route) matches(segs []string) bool {
	last := len(segs) - 1
	for i, s := range r.segs {
		got := segs[i]
		if i == last && r.verb != "" {
			var ok bool
			if got, ok = strings.CutSuffix(got, ":"+r.verb); !ok {
				return false
			}
		}
		variable := strings.HasPrefix(s, "{")
		if got == "" || (!variable && got != s) {
			return false
		}
	}
	return true
}

// getOnly are the paths the gateway serves itself, to GET (and HEAD) alone.
var getOnly = []string{"/healthz", "/readyz", "/openapi.json", "/metrics"}

// turnedOff says which setting turned a path off: /metrics and the console
// are served ahead of this handler while they are on, so a GET of one that
// reaches it finds it off.
func turnedOff(path string) (setting string, off bool) {
	switch {
	case path == "/metrics":
		return "listen.metrics: false, --metrics=false", true
	case path == "/console" || strings.HasPrefix(path, "/console/"):
		return "console.enabled: false", true
	}
	return "", false
}

// routes answers 404 and 405 for requests that no RPC serves, and passes the
// rest on. A HEAD of a GET route is served as the GET (net/http drops the
// body). A path with an escaped slash is no route: proxies check paths as
// sent, and "ORDERS%2Fconsumers%2Fbilling" must not reach what
// "ORDERS/consumers/billing" does.
func (rt routeTable) routes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(strings.ToUpper(r.URL.EscapedPath()), "%2F") {
			st := status.Newf(codes.NotFound, "no API call is at a path with an escaped slash (%%2F): names hold no slash")
			writeStatus(w, http.StatusNotFound, st, "ROUTE_NOT_FOUND")
			return
		}
		method := r.Method
		if method == http.MethodHead {
			method = http.MethodGet
		}
		if setting, off := turnedOff(r.URL.Path); off && method == http.MethodGet {
			st := status.Newf(codes.NotFound, "GET %s is turned off on this gateway (%s)", cut(r.URL.Path, 200), setting)
			writeStatus(w, http.StatusNotFound, st, "ROUTE_NOT_FOUND")
			return
		}
		methods, knownVerb, query := rt.allowed(r.URL.Path, method)
		own := slices.Contains(getOnly, r.URL.Path)
		if own {
			methods, knownVerb = []string{http.MethodGet}, false
		}
		if r.Method == http.MethodHead && slices.Contains(methods, http.MethodGet) {
			r = r.Clone(r.Context())
			r.Method = http.MethodGet
		}
		switch {
		case slices.Contains(methods, r.Method):
			if r.URL.RawQuery != "" && !own {
				if st := unknownQuery(r.Method, r.URL.Path, r.URL.Query(), query); st != nil {
					writeStatus(w, http.StatusBadRequest, st, "INVALID_ARGUMENT")
					return
				}
			}
			next.ServeHTTP(w, r)
		case len(methods) == 0 || (!knownVerb && hasVerb(r.URL.Path) && r.Method != http.MethodGet):
			st := status.Newf(codes.NotFound, "no API call is at %s %s; see /openapi.json for the routes", r.Method, cut(r.URL.Path, 200))
			writeStatus(w, http.StatusNotFound, st, "ROUTE_NOT_FOUND")
		default:
			if slices.Contains(methods, http.MethodGet) {
				methods = append(slices.Clone(methods), http.MethodHead)
			}
			allow := strings.Join(methods, ", ")
			w.Header().Set("Allow", allow)
			st := status.Newf(codes.Unimplemented, "%s takes %s, not %s", cut(r.URL.Path, 200), allow, cut(r.Method, 20))
			writeStatus(w, http.StatusMethodNotAllowed, st, "METHOD_NOT_ALLOWED")
		}
	})
}

// hasVerb reports whether a path's last segment ends in a custom verb
// (":fetch").
func hasVerb(path string) bool {
	return strings.Contains(path[strings.LastIndexByte(path, '/')+1:], ":")
}

// cut shortens s to at most n bytes for an error message, at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
