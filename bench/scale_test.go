package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestRunScale runs the scale measurement small: NATS and two jetgate
// replicas as processes, both ready, the busy window's Fetches, pulls and
// Acks counted, each replica's CPU and RSS read, the JSON written. It
// asserts no speed and no size.
func TestRunScale(t *testing.T) {
	o := smallOptions(t)
	o.Scale, o.ScaleReplicas, o.ScaleIdle, o.ScaleBusy = 20, 2, time.Second, 2
	rep, err := RunScale(t.Context(), o)
	if err != nil {
		t.Fatalf("RunScale: %v\n%s", err, o.Out)
	}
	if len(rep.Ready) != 2 || rep.Ready[0] <= 0 || rep.Ready[1] <= 0 || rep.StartError != "" {
		t.Fatalf("ready %v, start error %q", rep.Ready, rep.StartError)
	}
	if rep.Startup["CONSUMER.CREATE"]+rep.Startup["CONSUMER.DURABLE.CREATE"] < 20 {
		t.Errorf("requests until ready %v: not a create of each of the 20 consumers", rep.Startup)
	}
	for name, w := range map[string]*ScaleWindow{"idle": rep.Idle, "busy": rep.Busy} {
		if w == nil || w.Seconds < 1 || len(w.Replicas) != 2 || w.Replicas[0].RSS <= 0 || w.Replicas[1].RSS <= 0 {
			t.Fatalf("%s window: %+v", name, w)
		}
	}
	b := rep.Busy
	if b.BusyConsumers != 2 || b.Consumed <= 0 || b.Requests["CONSUMER.MSG.NEXT"] <= 0 || b.Requests["ACK"] <= 0 {
		t.Errorf("busy window: %+v", b)
	}
	if !bytes.Contains(o.Out.(*bytes.Buffer).Bytes(), []byte("NATS requests a second")) {
		t.Errorf("no table in\n%s", o.Out)
	}
	raw, err := os.ReadFile(o.JSON)
	if err != nil {
		t.Fatal(err)
	}
	var got ScaleReport
	if err := json.Unmarshal(raw, &got); err != nil || got.Consumers != 20 || got.Busy == nil || got.Busy.Consumed != b.Consumed {
		t.Errorf("JSON %s: %v", raw, err)
	}
}

// TestRequestKind names requests as the report groups them.
func TestRequestKind(t *testing.T) {
	for subject, want := range map[string]string{
		"$JS.API.CONSUMER.INFO.ORDERS.c00001":            "CONSUMER.INFO",
		"$JS.API.CONSUMER.CREATE.ORDERS.c00001.orders.x": "CONSUMER.CREATE",
		"$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.c1":      "CONSUMER.DURABLE.CREATE",
		"$JS.API.CONSUMER.MSG.NEXT.ORDERS.c1":            "CONSUMER.MSG.NEXT",
		"$JS.API.CONSUMER.LIST.ORDERS":                   "CONSUMER.LIST",
		"$JS.API.STREAM.INFO.ORDERS":                     "STREAM.INFO",
		"$JS.API.STREAM.MSG.GET.KV_x":                    "STREAM.MSG.GET",
		"$JS.API.DIRECT.GET.KV_jetgate_replicas.$KV.a.b": "DIRECT.GET KV_jetgate_replicas",
		"$JS.API.INFO":                                       "INFO",
		"$KV.jetgate_replicas.ORDERS.c1.abc":                 "KV.PUT jetgate_replicas",
		"$JS.ACK.ORDERS.c1.1.2.3.1700000000000000000.0":      "ACK",
		"$JS.API.CONSUMER.PAUSE.ORDERS.c1":                   "CONSUMER.PAUSE",
		"$JS.API.CONSUMER.LEADER.STEPDOWN.ORDERS.c1.ignored": "CONSUMER.LEADER.STEPDOWN",
	} {
		if got := requestKind(subject); got != want {
			t.Errorf("%s: %q; want %q", subject, got, want)
		}
	}
}

// TestRunScaleOnDemand runs the scale measurement small with the consumers
// made by nats.go and served on demand alone (replicas whose file has no
// consumers): both replicas ready, every consumer bound through each by its
// first call, that call's latency and the memory taken reported. It asserts
// no speed and no size.
func TestRunScaleOnDemand(t *testing.T) {
	o := smallOptions(t)
	o.Scale, o.ScaleReplicas, o.ScaleIdle, o.ScaleBusy, o.ScaleOnDemand = 10, 2, time.Second, 1, true
	rep, err := RunScale(t.Context(), o)
	if err != nil {
		t.Fatalf("RunScale: %v\n%s", err, o.Out)
	}
	if rep.Source != "on_demand" || len(rep.Ready) != 2 || rep.StartError != "" {
		t.Fatalf("source %q, ready %v, start error %q", rep.Source, rep.Ready, rep.StartError)
	}
	if rep.Bind["CONSUMER.INFO"] < 20 || rep.Startup["CONSUMER.CREATE"]+rep.Startup["CONSUMER.DURABLE.CREATE"] >= 10 {
		t.Errorf("bind requests %v, until ready %v: want an info of each of 10 consumers through each of 2 replicas, and none of them created", rep.Bind, rep.Startup)
	}
	if f, b := rep.FirstCall, rep.BoundCall; f == nil || b == nil || f.P50 <= 0 || b.P50 <= 0 || len(rep.RSSBeforeBind) != 2 || rep.RSSBeforeBind[0] <= 0 {
		t.Errorf("first call %+v, bound call %+v, RSS before %v", f, b, rep.RSSBeforeBind)
	}
	if rep.Busy == nil || rep.Busy.Consumed <= 0 {
		t.Errorf("busy window: %+v", rep.Busy)
	}
	for _, want := range []string{"GetConsumer latency: first call (binds) p50", "memory per bound consumer"} {
		if !bytes.Contains(o.Out.(*bytes.Buffer).Bytes(), []byte(want)) {
			t.Errorf("no %q in\n%s", want, o.Out)
		}
	}
}
