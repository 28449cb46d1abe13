package push

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/pull"
)

// A batch's json element is the json format's body with "id" added, member
// for member, whatever the message holds.
func TestAJSONElementIsTheJSONFormWithItsID(t *testing.T) {
	meta := pull.Metadata{Stream: "ORDERS", Consumer: "c", StreamSeq: 7, ConsumerSeq: 3, Delivered: 2, Pending: 9,
		Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)}
	for _, d := range []*consumer.Delivery{
		{Subject: "orders.new", Data: []byte("hello"), Meta: meta, Token: "secret", Deadline: time.Now()},
		{Subject: "orders.new", Meta: meta},
		{Subject: "a.b", Data: []byte{0, 1, 2, '"', '\\', '}'}, Meta: meta,
			Header: nats.Header{"X-Quote": {`say "hi" \ {`, "b"}, "Content-Type": {"application/json"}}},
		{Subject: "bad\xff.subject", Data: []byte(`{"x":[1,2,{"y":"}"}]}`), Meta: meta, Header: nats.Header{"K\xfe": {"v\xff"}}},
	} {
		body, err := jsonBody(d)
		if err != nil {
			t.Fatal(err)
		}
		el, err := element(FormatJSON, d)
		if err != nil {
			t.Fatal(err)
		}
		var want, got map[string]any
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(el, &got); err != nil {
			t.Fatalf("%v: %s", err, el)
		}
		want["id"] = "ORDERS.7"
		if !reflect.DeepEqual(got, want) {
			t.Errorf("element\n %s\nwant the json form and its id\n %s", el, body)
		}
	}
}

// appendMembers copies an object's members but those dropped, whatever
// whitespace protojson put between them.
func TestAppendMembers(t *testing.T) {
	drop := func(k []byte) bool { return string(k) == "token" }
	for in, want := range map[string]string{
		`{}`:                  `{"id":1}`,
		` { "token" : "x" } `: `{"id":1}`,
		`{"a":1,"token":"t","b":[1,{"c":"}]"}],"d":null}`:           `{"id":1,"a":1,"b":[1,{"c":"}]"}],"d":null}`,
		"{\n\"a\" : \"x\\\"y\" ,\t\"token\":{\"n\":[]},\"e\":true}": `{"id":1,"a" : "x\"y","e":true}`,
		`{"a":-1.5e3,"token":false}`:                                `{"id":1,"a":-1.5e3}`,
	} {
		out, err := appendMembers([]byte(`{"id":1`), []byte(in), drop)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if out = append(out, '}'); string(out) != want || !json.Valid(out) {
			t.Errorf("%q: %s; want %s", in, out, want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":1`, `{"a":"x}`, `{"a":1 "b":2}`, `{a:1}`} {
		if _, err := appendMembers(nil, []byte(bad), drop); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
