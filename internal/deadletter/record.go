package deadletter

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// recordTermed is the subject of jetgate's own record of a Term. The
// server answers a Term before it sends the Term's MSG_TERMINATED advisory,
// and a server shutting down drops what it has not sent yet: Terms applied
// and confirmed just before a restart leave no advisory, and no dead letter
// (reliability's TestFaultTermsThroughANATSRestartAreDeadLettered: 711 of
// 2,360 confirmed Terms, without these records). So once the server has
// confirmed the Terms of a settle of a consumer with on_term, the replica
// that sent them stores one record of them in the advisory stream too. The
// worker copies the record's Terms as it copies the advisories, and the
// copy's Nats-Msg-Id keeps each one dead letter. Publish refuses subjects
// under _JETGATE. to callers, and the NATS permissions keep every other
// user of the account off them (README), so that nobody else can forge a
// record.
const recordTermed = "_JETGATE.TERMINATED."

// Termed is a delivery whose Term the server confirmed.
type Termed struct {
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// termRecord is the record of the Terms of one settle: what the server's
// advisory says of each message.
type termRecord struct {
	Stream   string   `json:"stream"`
	Consumer string   `json:"consumer"`
	Reason   string   `json:"reason"`
	Terms    []Termed `json:"terms"` // none: a probe (ProbeRecords)
	// Domain is the JetStream domain of the consumer, as the server's
	// advisories name it: the record crosses a leaf node as they do.
	Domain string `json:"domain,omitempty"`
}

// RecordTerms stores the record of the Terms of ts, of the consumer name of
// stream in JetStream domain domain, with their reason, in the advisory
// stream, and returns once it is stored. The record carries a Nats-Msg-Id
// of its deliveries, so that a record made again is stored once.
func RecordTerms(ctx context.Context, js jetstream.JetStream, domain, stream, name, reason string, ts []Termed) error {
	data, err := json.Marshal(termRecord{Stream: stream, Consumer: name, Reason: strings.TrimSpace(reason), Terms: ts, Domain: domain}) // the reason as the server's advisory says it
	if err != nil {
		return err
	}
	h := fnv.New64a()
	var b [16]byte
	for _, t := range ts {
		binary.LittleEndian.PutUint64(b[:8], t.StreamSeq)
		binary.LittleEndian.PutUint64(b[8:], t.Deliveries)
		_, _ = h.Write(b[:])
	}
	id := "jetgate-termed:" + stream + ":" + name + ":" + strconv.FormatUint(h.Sum64(), 16)
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: recordTermed + stream + "." + name, Data: data},
		jetstream.WithMsgID(id), jetstream.WithExpectStream(AdvisoryStream))
	return err
}

// ProbeRecords stores a record of no Term for the consumer name of stream,
// which the worker drops, to prove at start that the replica may store the
// records of its Terms: without the permission to publish on the subject,
// every Term would wait out its record.
func ProbeRecords(ctx context.Context, js jetstream.JetStream, stream, name string) error {
	subject := recordTermed + stream + "." + name
	data, err := json.Marshal(termRecord{Stream: stream, Consumer: name})
	if err != nil {
		return err
	}
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data}, jetstream.WithExpectStream(AdvisoryStream)); err != nil {
		return fmt.Errorf("stream %q consumer %q: dead_letter.on_term: the record of a Term could not be stored on %s (jetgate needs to publish on it: see NATS permissions): %w",
			stream, name, subject, err)
	}
	return nil
}
