package app

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jetgate/jetgate/internal/config"
	"github.com/jetgate/jetgate/internal/consumer"
)

// explainRefusal turns the server's refusal of a configured consumer into
// an error at the consumer's place in the file (file:line), saying what to
// do; other errors pass as they are.
func explainRefusal(cfg *config.Config, err error) error {
	var r *consumer.RefusedError
	if !errors.As(err, &r) {
		return err
	}
	path := "consumers"
	for i, k := range cfg.Consumers {
		if k.Stream == r.Stream && k.Name == r.Name {
			path = fmt.Sprintf("consumers[%d]", i)
			if f := fixedField(r.Reason); f != "" {
				path += "." + f // its flag, or its line, where one gave it
			}
		}
	}
	advice := "change the field the server names"
	if r.Op == "update" {
		advice = fmt.Sprintf("the consumer exists on the server with a field that cannot be changed: set that field back to the server's value "+
			"(nats consumer info %s %s shows it), give the consumer another name (a new consumer, starting from its deliver policy), "+
			"or delete it first (nats consumer rm %s %s: its acknowledgement state is lost)", r.Stream, r.Name, r.Stream, r.Name)
	}
	return cfg.Errorf(path, "the server refused to %s consumer %q of stream %q: %s; %s", r.Op, r.Name, r.Stream, r.Reason, advice)
}

// fixedFields are the fields of a consumer the server names when it refuses
// to change them ("deliver policy can not be updated"), by the server's
// words, as the file names them.
var fixedFields = map[string]string{
	"deliver policy": "deliver_policy",
	"start sequence": "opt_start_seq",
	"start time":     "opt_start_time",
}

// fixedField is the field of the file a refusal's reason names, or "".
func fixedField(reason string) string {
	for words, field := range fixedFields {
		if strings.Contains(reason, words+" can not be updated") {
			return field
		}
	}
	return ""
}
