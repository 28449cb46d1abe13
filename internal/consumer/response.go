package consumer

import "unicode/utf8"

// What one response carries. The pull's max_bytes bounds what the server
// sends, counted as the server counts it; a response also carries each
// message's token and lease, and a subject or header that is not UTF-8
// twice (wire.Message: each invalid byte replaced by U+FFFD, three bytes,
// and the exact bytes beside them). So a Fetch answers with what fits a
// default gRPC client (DESIGN section 3) and keeps the rest for the next
// Fetch, and a Consume burst goes out in as many responses as it takes.

// responseBudget is the most bytes of messages one response carries: a
// default gRPC client's 4 MiB, less room for the response's own fields.
// The pull of a gateway whose limits.max_fetch_bytes is raised above it
// may carry more (fit).
const responseBudget = 4<<20 - 64<<10

// perMessage is at most what a message's lease, metadata and field framing
// add to its size and token in a response.
const perMessage = 512

// UTF8 reports whether d's subject and every header name and value are
// UTF-8, as protobuf strings and JSON must be.
func (d *Delivery) UTF8() bool {
	if !utf8.ValidString(d.Subject) {
		return false
	}
	for k, vs := range d.Header {
		if !utf8.ValidString(k) {
			return false
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return false
			}
		}
	}
	return true
}

// wireSize is at most the bytes d takes in a response; utf8 says whether
// to count its subject and headers as UTF-8 (else four times: a
// replacement of three bytes for each, and each once more raw). Its
// headers are read once: it runs for every message of every response.
func (d *Delivery) wireSize(utf8 bool) int64 {
	names := int64(len(d.Subject)) // subject and headers, as size counts them
	var framing int64              // a header's map entry and each value's
	for k, vs := range d.Header {
		framing += 8 + 3*int64(len(vs))
		for _, v := range vs {
			names += int64(len(k) + len(v) + 4)
		}
	}
	n := names + int64(len(d.Data)) + int64(len(d.Token)) + perMessage + framing
	if !utf8 {
		n += 3 * names
	}
	return n
}

// fit splits ds, of a pull of batch messages and at most maxFetchBytes,
// into the first that fit one response (one at least, whatever its size:
// its own response) and the rest. A response carries responseBudget, or,
// where max_fetch_bytes is raised past it (its callers raised their
// limits), what the pull may bring. It checks no subject or header for
// UTF-8 unless ds could be over with every one of them not UTF-8.
func fit(ds []*Delivery, maxFetchBytes int64, batch int) (fits, rest []*Delivery) {
	budget := int64(responseBudget)
	if maxFetchBytes > responseBudget {
		budget = maxFetchBytes + int64(batch)*perMessage
	}
	var most int64
	for _, d := range ds {
		most += d.wireSize(false)
	}
	if most <= budget {
		return ds, nil
	}
	var n int64
	for i, d := range ds {
		if n += d.wireSize(d.UTF8()); n > budget && i > 0 {
			return ds[:i], ds[i:]
		}
	}
	return ds, nil
}
