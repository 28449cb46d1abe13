package deadletter

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// recordTermed is the subject of jetgate's own record of a Term. The
// server answers a Term before it sends the Term's MSG_TERMINATED advisory,
// and a server shutting down drops what it has not sent yet: Terms applied
// and confirmed just before a restart leave no advisory, and no dead letter
// (reliability's TestFaultTermsThroughANATSRestartAreDeadLettered: 711 of
// 2,360 confirmed Terms, without these records). So once the server has
// confirmed a Term of a consumer with on_term, the replica that sent it
// stores a record of it in the advisory stream too. The worker copies both
// alike, and the copy's Nats-Msg-Id keeps them one dead letter. Publish
// refuses subjects under _JETGATE. to callers, and the NATS permissions
// keep every other user of the account off them (README), so that nobody
// else can forge a record.
const recordTermed = "_JETGATE.TERMINATED."

// Termed is a delivery whose Term the server confirmed.
type Termed struct {
	StreamSeq, Deliveries uint64
}

// recordsAtOnce bounds the records of one RecordTerms in flight.
const recordsAtOnce = 16

// RecordTerms stores the record of each Term of ts, of the consumer name of
// stream, with the Term's reason, in the advisory stream, and returns once
// every record is stored or one could not be. Each record says what the
// server's advisory says, and carries a Nats-Msg-Id of its own delivery,
// so that a record made again is stored once.
func RecordTerms(ctx context.Context, js jetstream.JetStream, stream, name, reason string, ts []Termed) error {
	subject := recordTermed + stream + "." + name
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(recordsAtOnce)
	for _, t := range ts {
		g.Go(func() error {
			data, err := json.Marshal(advisory{Stream: stream, Consumer: name, StreamSeq: t.StreamSeq, Deliveries: t.Deliveries,
				Reason: strings.TrimSpace(reason)}) // as the server's advisory says it
			if err != nil {
				return err
			}
			id := "jetgate-termed:" + stream + ":" + name + ":" + strconv.FormatUint(t.StreamSeq, 10) + ":" + strconv.FormatUint(t.Deliveries, 10)
			_, err = js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data}, jetstream.WithMsgID(id), jetstream.WithExpectStream(AdvisoryStream))
			return err
		})
	}
	return g.Wait()
}

// ProbeRecords stores a record of no Term (stream sequence 0, which the
// worker drops) for the consumer name of stream, to prove at start that
// the replica may store the records of its Terms: without the permission
// to publish on the subject, every Term would wait out its record.
func ProbeRecords(ctx context.Context, js jetstream.JetStream, stream, name string) error {
	subject := recordTermed + stream + "." + name
	data, err := json.Marshal(advisory{Stream: stream, Consumer: name})
	if err != nil {
		return err
	}
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data}, jetstream.WithExpectStream(AdvisoryStream)); err != nil {
		return fmt.Errorf("stream %q consumer %q: dead_letter.on_term: the record of a Term could not be stored on %s (jetgate needs to publish on it: see NATS permissions): %w",
			stream, name, subject, err)
	}
	return nil
}
