package readme_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// block is one fenced ```sh block of the README, with what its annotation
// (an HTML comment on the line before the fence) says about it:
//
//	<!-- test: skip REASON -->        not run (it needs a tool Go does not bring)
//	<!-- test: server [ADDR[/PATH]] --> a long-running process of its own terminal:
//	                                  started, then ready once ADDR accepts (PATH answers 200)
//	<!-- test: stop -->               stop every running server first (as the README says to)
//	<!-- test: errors -->             error answers ({"code": …}) are what it shows
//
// and a ```text block right after it, marked <!-- test: output -->, is what it
// prints (for a server, by the time it is stopped): every line, in any order,
// "…" matching any text within a line.
type block struct {
	line   int // of the fence
	text   string
	skip   string
	server bool
	ready  string
	stop   bool
	errors bool
	output []string // nil: not shown
}

var annotation = regexp.MustCompile(`^<!-- test: (.*) -->$`)

// parse finds the README's sh blocks and their annotations.
func parse(readme string) ([]block, error) {
	lines := strings.Split(readme, "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") || fence == "```" {
			continue
		}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("README.md:%d: a fence that does not close", i+1)
		}
		notes := annotationsBefore(lines, i)
		body := strings.Join(lines[i+1:end], "\n")
		switch {
		case fence == "```sh":
			b := block{line: i + 1, text: body}
			if err := b.note(notes); err != nil {
				return nil, fmt.Errorf("README.md:%d: %w", i+1, err)
			}
			out = append(out, b)
		case slices.Contains(notes, "output"):
			if len(out) == 0 || fence != "```text" {
				return nil, fmt.Errorf("README.md:%d: an output block that follows no sh block, or is not ```text", i+1)
			}
			out[len(out)-1].output = strings.Split(body, "\n")
		}
		i = end
	}
	return out, nil
}

// annotationsBefore are the test annotations on the lines just before line i.
func annotationsBefore(lines []string, i int) []string {
	var notes []string
	for j := i - 1; j >= 0; j-- {
		m := annotation.FindStringSubmatch(strings.TrimSpace(lines[j]))
		if m == nil {
			break
		}
		notes = append(notes, m[1])
	}
	return notes
}

func (b *block) note(notes []string) error {
	for _, n := range notes {
		word, rest, _ := strings.Cut(n, " ")
		switch word {
		case "skip":
			if rest == "" {
				return fmt.Errorf("skip says no reason")
			}
			b.skip = rest
		case "server":
			b.server, b.ready = true, rest
		case "stop":
			b.stop = true
		case "errors":
			b.errors = true
		default:
			return fmt.Errorf("unknown test annotation %q", n)
		}
	}
	return nil
}

// matches reports whether got has the lines of want, in any order, each
// "…" in want matching any text.
func matches(want, got []string) (missing []string) {
	left := slices.Clone(got)
	for _, w := range want {
		re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(compact(w)), "…", ".*") + "$")
		i := slices.IndexFunc(left, func(g string) bool { return re.MatchString(compact(g)) })
		if i < 0 {
			missing = append(missing, w)
			continue
		}
		left = slices.Delete(left, i, i+1)
	}
	return missing
}

// compact is a line without trailing blanks and, where it is JSON or a
// member of an object (`"push":{…}`, as grep -o cuts one out), without the
// spaces between its tokens: protojson varies those on purpose, from one
// build of the binary to the next.
func compact(line string) string {
	line = strings.TrimRight(line, " ")
	var b bytes.Buffer
	if json.Compact(&b, []byte(line)) == nil {
		return b.String()
	}
	var member bytes.Buffer
	if json.Compact(&member, []byte("{"+line+"}")) == nil {
		return strings.TrimSuffix(strings.TrimPrefix(member.String(), "{"), "}")
	}
	return line
}

// Protojson's spaces are not compared, in a whole line of JSON or in a
// member of an object cut out of one.
func TestCompactDropsProtojsonSpaces(t *testing.T) {
	for in, want := range map[string]string{
		`{"stream":"ORDERS", "seq":"1"}`:             `{"stream":"ORDERS","seq":"1"}`,
		`"push":{"url":"http://h/x", "inFlight":0}`:  `"push":{"url":"http://h/x","inFlight":0}`,
		`"push":{"url":"http://h/x","inFlight":0,…}`: `"push":{"url":"http://h/x","inFlight":0,…}`,
		`curl -s localhost:8080/v1/streams   `:       `curl -s localhost:8080/v1/streams`,
	} {
		if got := compact(in); got != want {
			t.Errorf("compact(%q) = %q, want %q", in, got, want)
		}
	}
}
