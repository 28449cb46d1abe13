package app

import (
	"errors"
	"fmt"

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
