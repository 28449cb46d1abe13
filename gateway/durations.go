package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// durationForms is what a Duration field takes, for the error that refuses
// one.
const durationForms = `protobuf's form ("0.5s", "90s") or Go's ("500ms", "1m", "1h30m")`

// protoDuration is protojson's form of a Duration: seconds, up to nine
// decimals, and an "s".
var protoDuration = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?s$`)

// errBadDuration marks a Duration field holding neither form.
var errBadDuration = errors.New("not a duration")

// goDurations rewrites every Duration field of body (a JSON object of the
// message md, nested messages and lists included) given in Go's form
// ("500ms", "1h30m") into protojson's ("0.5s"), in place, so that the rest
// of the body keeps its positions. changed reports whether it rewrote any.
// A Duration string in neither form is an error naming the field; a body
// that is not JSON is left for protojson to describe (changed false, no
// error).
func goDurations(md protoreflect.MessageDescriptor, body []byte) (out []byte, changed bool, err error) {
	w := &durationWalk{dec: json.NewDecoder(bytes.NewReader(body)), body: body}
	if err := w.message(md, ""); err != nil {
		if errors.Is(err, errBadDuration) {
			return nil, false, err
		}
		return body, false, nil
	}
	if len(w.edits) == 0 {
		return body, false, nil
	}
	var b bytes.Buffer
	last := 0
	for _, e := range w.edits {
		b.Write(body[last:e.start])
		b.WriteString(e.text)
		last = e.end
	}
	b.Write(body[last:])
	return b.Bytes(), true, nil
}

// durationEdit replaces body[start:end] with text.
type durationEdit struct {
	start, end int
	text       string
}

type durationWalk struct {
	dec   *json.Decoder
	body  []byte
	edits []durationEdit
}

// message walks one JSON value that should be an object of md.
func (w *durationWalk) message(md protoreflect.MessageDescriptor, path string) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return w.skipRest(tok)
	}
	for w.dec.More() {
		key, err := w.dec.Token()
		if err != nil {
			return err
		}
		name, _ := key.(string)
		fd := md.Fields().ByJSONName(name)
		if fd == nil {
			fd = md.Fields().ByName(protoreflect.Name(name))
		}
		if err := w.field(fd, join(path, name)); err != nil {
			return err
		}
	}
	_, err = w.dec.Token() // '}'
	return err
}

// field walks the value of fd (nil: a field the message does not have,
// left for protojson to refuse).
func (w *durationWalk) field(fd protoreflect.FieldDescriptor, path string) error {
	if fd == nil || fd.Message() == nil || fd.IsMap() {
		return w.skip()
	}
	one := func(p string) error {
		if fd.Message().FullName() == "google.protobuf.Duration" {
			return w.duration(p)
		}
		if fd.Message().FullName().Parent() == "google.protobuf" {
			return w.skip() // Timestamp, Struct, wrappers: their own forms
		}
		return w.message(fd.Message(), p)
	}
	if !fd.IsList() {
		return one(path)
	}
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return w.skipRest(tok)
	}
	for i := 0; w.dec.More(); i++ {
		if err := one(fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	_, err = w.dec.Token() // ']'
	return err
}

// duration reads a Duration's value and, when it is a string in Go's form,
// records its rewrite.
func (w *durationWalk) duration(path string) error {
	start := int(w.dec.InputOffset())
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	s, ok := tok.(string)
	if !ok {
		return w.skipRest(tok) // null, or a number protojson refuses
	}
	if protoDuration.MatchString(s) {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%s: %q is %w: send %s", path, s, errBadDuration, durationForms)
	}
	end := int(w.dec.InputOffset())
	// The string starts after the colon (or comma, or bracket) and spaces
	// that precede it.
	for start < end && w.body[start] != '"' {
		start++
	}
	w.edits = append(w.edits, durationEdit{start: start, end: end, text: strconv.Quote(protoForm(d))})
	return nil
}

// protoForm writes d as protojson does: seconds with the decimals needed.
func protoForm(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	s := strconv.FormatInt(int64(d/time.Second), 10)
	if ns := int64(d % time.Second); ns != 0 {
		frac := strconv.FormatInt(ns+1e9, 10)[1:]
		s += "." + string(bytes.TrimRight([]byte(frac), "0"))
	}
	return sign + s + "s"
}

// skip reads one whole JSON value.
func (w *durationWalk) skip() error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	return w.skipRest(tok)
}

// skipRest reads the rest of a value whose first token is tok.
func (w *durationWalk) skipRest(tok json.Token) error {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := w.dec.Token()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
