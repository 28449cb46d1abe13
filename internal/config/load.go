package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads a configuration file; see Parse.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the configuration file: %v", err)}
	}
	c, err := Parse(path, b)
	if err != nil {
		return nil, err
	}
	resolvePaths(c, filepath.Dir(path))
	return c, nil
}

// Parse reads the YAML of a configuration file, named name in errors. A
// field the configuration does not know is an error naming it and its line,
// as is a value of the wrong kind; the rules between fields are Validate's.
// It fills in no defaults (Resolve does).
func Parse(name string, b []byte) (*Config, error) {
	c := newConfig()
	c.file = name
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return c, nil // an empty file: every default
		}
		return nil, c.syntaxError(err, b)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, c.syntaxError(err, b)
	default:
		return nil, &Error{File: name, Line: extra.Line, Msg: "a second YAML document: the file holds one"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return c, nil
		}
		root = root.Content[0]
	}
	if isNull(root) {
		return c, nil
	}
	// Walk the tree first, so that every mistake is reported with its path
	// as well as its line; then decode, strictly.
	if err := c.check(root, "", reflect.TypeFor[Config]()); err != nil {
		return nil, err
	}
	strict := yaml.NewDecoder(bytes.NewReader(b))
	strict.KnownFields(true)
	if err := strict.Decode(c); err != nil {
		return nil, c.syntaxError(err, nil) // the walk above should have caught it
	}
	return c, nil
}

func newConfig() *Config {
	return &Config{origins: &origins{lines: make(map[string]int), flags: make(map[string]string)}}
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError turns the YAML library's error into an Error with its line.
func (c *origins) syntaxError(err error, b []byte) *Error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	e := &Error{File: c.file, Msg: strings.TrimPrefix(msg, "yaml: ")}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Msg = m[2]
	}
	if line := faultyLine(b); line > e.Line {
		e.Line = line
		e.Msg += " (check this line's indentation against the lines above it)"
	}
	return e
}

// incomplete reports whether a parser's error is that of a file cut short
// inside a flow collection or a quoted string, which the whole file closes.
func incomplete(msg string) bool {
	for _, s := range []string{"end of stream", "flow", "expected ','", "expected node content"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// faultyLine is the first line of b that the file cannot be read up to: a
// YAML parser reports a fault in a block where the block began (line 1 for a
// key indented wrongly on line 4), while the file's first lines alone read
// well up to the faulty one. A prefix that ends inside a flow collection or
// a quoted string is not a fault. 0: none found.
func faultyLine(b []byte) int {
	lines := bytes.SplitAfter(b, []byte("\n"))
	for k := 1; k <= len(lines); k++ {
		var n yaml.Node
		err := yaml.Unmarshal(bytes.Join(lines[:k], nil), &n)
		if err != nil && !incomplete(err.Error()) {
			return k
		}
	}
	return 0
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

var (
	durationType = reflect.TypeFor[Duration]()
	byteSizeType = reflect.TypeFor[ByteSize]()
)

// check walks node n, the value at path, against the Go type t: every
// mapping key must be a field of t, every value of the kind t needs. It
// records the line of every field the file names.
func (c *origins) check(n *yaml.Node, path string, t reflect.Type) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if isNull(n) {
		return nil // as if the field were left out
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return c.kindError(n, path, "a duration")
		}
		if _, err := parseDuration(n.Value); err != nil {
			return &Error{File: c.file, Line: n.Line, Path: path, Msg: err.Error()}
		}
		return nil
	case t == byteSizeType:
		if n.Kind != yaml.ScalarNode {
			return c.kindError(n, path, "a size")
		}
		if _, err := parseByteSize(n.Value); err != nil {
			return &Error{File: c.file, Line: n.Line, Path: path, Msg: err.Error()}
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return c.kindError(n, path, "a mapping of "+strings.Join(fieldNames(t), ", "))
		}
		return c.checkMapping(n, path, t)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return c.kindError(n, path, "a list")
		}
		for i, e := range n.Content {
			p := index(path, i)
			c.lines[p] = e.Line
			if err := c.check(e, p, t.Elem()); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return c.kindError(n, path, "a single value")
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		what := map[reflect.Kind]string{
			reflect.Int: "a whole number", reflect.Int64: "a whole number",
			reflect.Uint64: "a whole number, 0 or more", reflect.Bool: "true or false",
		}[t.Kind()]
		return &Error{File: c.file, Line: n.Line, Path: path, Msg: fmt.Sprintf("%s is not %s", quote(n.Value), what)}
	}
	return nil
}

func (c *origins) checkMapping(n *yaml.Node, path string, t reflect.Type) error {
	fields := make(map[string]reflect.Type)
	for i := range t.NumField() {
		f := t.Field(i)
		if name := yamlName(f); name != "" {
			fields[name] = f.Type
		}
	}
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" { // <<: *anchor
			if err := c.checkMerge(v, path, t); err != nil {
				return err
			}
			continue
		}
		p := join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			return &Error{File: c.file, Line: k.Line, Path: p, Msg: fmt.Sprintf("given twice (first on line %d)", first)}
		}
		seen[k.Value] = k.Line
		ft, ok := fields[k.Value]
		if !ok {
			where := "the file"
			if path != "" {
				where = path
			}
			return &Error{File: c.file, Line: k.Line, Path: p,
				Msg: fmt.Sprintf("unknown field %s (%s takes %s)", quote(k.Value), where, strings.Join(fieldNames(t), ", "))}
		}
		if !isNull(v) {
			c.lines[p] = k.Line
		}
		if err := c.check(v, p, ft); err != nil {
			return err
		}
	}
	return nil
}

func (c *origins) checkMerge(v *yaml.Node, path string, t reflect.Type) error {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	if v.Kind == yaml.SequenceNode {
		for _, e := range v.Content {
			if err := c.checkMerge(e, path, t); err != nil {
				return err
			}
		}
		return nil
	}
	if v.Kind != yaml.MappingNode {
		return c.kindError(v, path, "a mapping to merge")
	}
	return c.checkMapping(v, path, t)
}

func (c *origins) kindError(n *yaml.Node, path, want string) *Error {
	got := map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list", yaml.ScalarNode: quote(n.Value)}[n.Kind]
	return &Error{File: c.file, Line: n.Line, Path: path, Msg: fmt.Sprintf("want %s, not %s", want, got)}
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name := yamlName(t.Field(i)); name != "" {
			names = append(names, name)
		}
	}
	return slices.Clip(names)
}
