package config

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

const onDemandAlone = `streams: [{name: ORDERS, subjects: ["orders.>"]}]
on_demand:
  match:
    - {stream: ORDERS, consumer: "team-*"}
`

// A file with on_demand and no consumers is a gateway that serves on
// demand alone: it resolves, idle_unbind filled in, and check-config prints
// the block, which reads back to the same.
func TestOnDemandAloneFile(t *testing.T) {
	path := writeFile(t, onDemandAlone)
	c, err := Resolve(path, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Consumers) != 0 || len(c.ConsumerConfigs()) != 0 {
		t.Errorf("consumers %+v; want none", c.Consumers)
	}
	want := consumer.OnDemand{Match: []consumer.Match{{Stream: "ORDERS", Consumer: "team-*"}}, IdleUnbind: consumer.DefaultIdleUnbind}
	if got := c.OnDemand.CoreOnDemand(); !reflect.DeepEqual(got, want) {
		t.Errorf("on demand %+v; want %+v", got, want)
	}
	var out bytes.Buffer
	if err := Write(&out, c); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"on_demand:\n  match:\n    - stream: ORDERS\n      consumer: team-*\n  idle_unbind: 10m\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	back, err := Parse("out.yaml", out.Bytes())
	if err != nil {
		t.Fatalf("the output does not parse: %v\n%s", err, out.String())
	}
	back.fillDefaults()
	if err := back.Validate(); err != nil || !reflect.DeepEqual(back.OnDemand, c.OnDemand) {
		t.Errorf("read back %+v (%v); want %+v", back.OnDemand, err, c.OnDemand)
	}
}

// With neither consumers nor on_demand there is nothing to serve, and the
// error names every way to serve something.
func TestNothingToServe(t *testing.T) {
	for name, text := range map[string]string{
		"no block":    "streams: [{name: ORDERS, subjects: [\"orders.>\"]}]\n",
		"no match":    "on_demand: {}\n",
		"empty match": "on_demand: {match: []}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Resolve(writeFile(t, text), Flags{})
			want := "consumers: no consumer is configured: add one to consumers, give --stream and --consumer, serve existing consumers with on_demand (--on-demand STREAM/CONSUMER), or let callers make them (admin)"
			if err == nil || !strings.HasSuffix(err.Error(), want) {
				t.Errorf("error %v; want one ending %q", err, want)
			}
		})
	}
}

// --on-demand with no file and no --consumer: the gateway serves on demand
// alone, and the flags make up no consumer and no stream. With --consumer,
// that consumer besides. With no flag at all, the embedded default is still
// ORDERS/billing.
func TestOnDemandFlag(t *testing.T) {
	match := []OnDemandMatch{{Stream: "ORDERS", Consumer: "team-*"}, {Stream: "*", Consumer: "audit"}}
	for _, tt := range []struct {
		name      string
		flags     Flags
		consumers []string
		streams   int
		match     []OnDemandMatch
	}{
		{"alone", given(func(f *Flags) { f.OnDemand = []string{"ORDERS/team-*", "*/audit"} }, "on-demand"), nil, 0, match},
		{"alone, Given unset", func() Flags { f := DefaultFlags(); f.OnDemand = []string{"ORDERS/team-*", "*/audit"}; return f }(), nil, 0, match},
		{"with a consumer", given(func(f *Flags) { f.OnDemand, f.Consumer = []string{"ORDERS/team-*", "*/audit"}, "ledger" }, "on-demand", "consumer"),
			[]string{"ORDERS/ledger"}, 1, match},
		{"none", given(func(*Flags) {}), []string{"ORDERS/billing"}, 1, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Resolve("", tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, k := range c.Consumers {
				names = append(names, k.Stream+"/"+k.Name)
			}
			if !reflect.DeepEqual(names, tt.consumers) || len(c.Streams) != tt.streams || !reflect.DeepEqual(c.OnDemand.Match, tt.match) {
				t.Errorf("consumers %v, streams %+v, match %+v; want %v, %d streams, %+v", names, c.Streams, c.OnDemand.Match, tt.consumers, tt.streams, tt.match)
			}
			if want := Duration(consumer.DefaultIdleUnbind); tt.match != nil && c.OnDemand.IdleUnbind != want {
				t.Errorf("idle_unbind %v; want %v", c.OnDemand.IdleUnbind, want)
			}
		})
	}
}

// A value of --on-demand that is not STREAM/CONSUMER glob patterns is
// refused by the flag, with the form it takes; so is a consumer flag that
// describes no consumer.
func TestOnDemandFlagErrors(t *testing.T) {
	form := "give STREAM/CONSUMER, glob patterns (path.Match) of both, such as ORDERS/team-* or */*"
	for _, tt := range []struct {
		value []string
		also  []string
		want  string
	}{
		{[]string{"ORDERS"}, nil, `--on-demand: "ORDERS": ` + form},
		{[]string{"ORDERS/"}, nil, `--on-demand: "ORDERS/": ` + form},
		{[]string{"/team-*"}, nil, `--on-demand: "/team-*": ` + form},
		{[]string{"ORDERS/team/a"}, nil, `--on-demand: "ORDERS/team/a": ` + form},
		{[]string{"ORDERS/*", "ORD[/x"}, nil, `--on-demand: "ORD[": not a glob pattern`},
		{[]string{"ORDERS/team.a"}, nil, `--on-demand: "team.a": stream and consumer names cannot contain`},
		{[]string{"ORDERS/*"}, []string{"ack-wait"}, "--ack-wait: describes the consumer --consumer names: give --consumer too"},
		{[]string{"ORDERS/*"}, []string{"stream"}, "--stream: describes the consumer --consumer names: give --consumer too"},
	} {
		f := given(func(f *Flags) { f.OnDemand = tt.value }, append(tt.also, "on-demand")...)
		_, err := Resolve("", f)
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("--on-demand %q with %v: error %v; want one starting %q", tt.value, tt.also, err, tt.want)
		}
	}
}

// With a file, a given --on-demand replaces the file's match, and an error
// in it is the flag's, not the file's line.
func TestOnDemandFlagOverridesTheFile(t *testing.T) {
	path := writeFile(t, onDemandAlone+"  idle_unbind: 1m\n")
	c, err := Resolve(path, given(func(f *Flags) { f.OnDemand = []string{"PAYMENTS/*"} }, "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []OnDemandMatch{{Stream: "PAYMENTS", Consumer: "*"}}; !reflect.DeepEqual(c.OnDemand.Match, want) || c.OnDemand.IdleUnbind != Duration(time.Minute) {
		t.Errorf("on demand %+v; want match %+v and the file's idle_unbind", c.OnDemand, want)
	}
	_, err = Resolve(path, given(func(f *Flags) { f.OnDemand = []string{"PAY>/*"} }, "on-demand"))
	if want := `--on-demand: "PAY>": stream and consumer names cannot contain`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v; want one starting %q", err, want)
	}
	// Not given: the file's, whatever the flag's field holds.
	c, err = Resolve(path, given(func(f *Flags) { f.OnDemand = []string{"PAYMENTS/*"} }))
	if err != nil || c.OnDemand.Match[0].Stream != "ORDERS" {
		t.Errorf("on demand %+v (%v); want the file's", c.OnDemand, err)
	}
}

// A pattern that would match jetgate's own streams is allowed, with one
// warning at its line naming them, but for "*", documented as every stream
// but jetgate's own; a file consumer on one of them is refused.
func TestOnDemandPatternsOverJetgatesOwnStreams(t *testing.T) {
	path := writeFile(t, "on_demand:\n  match:\n    - {stream: ORDERS, consumer: \"*\"}\n    - {stream: \"*\", consumer: \"*\"}\n    - {stream: \"*_*\", consumer: \"*\"}\n")
	c, err := Resolve(path, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	ws := c.Warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], ":5") || !strings.Contains(ws[0], "never served") ||
		!strings.Contains(ws[0], "KV_jetgate_settles, KV_jetgate_members, JETGATE_ADVISORIES") {
		t.Fatalf("warnings %q; want one, at line 5, naming every internal stream", ws)
	}
	path = writeFile(t, "consumers:\n  - {stream: JETGATE_ADVISORIES, name: mine}\n")
	if _, err := Resolve(path, Flags{}); err == nil || !strings.Contains(err.Error(), "jetgate makes for itself") {
		t.Fatalf("a consumer of JETGATE_ADVISORIES: %v; want it refused", err)
	}
}
