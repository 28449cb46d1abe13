package app

import (
	"net/http"
	"strings"
	"testing"
)

// UpdateConsumer's updateMask takes maxWaiting (the README listed it, and
// the answer to a bad mask lists max_waiting among what "can" change), but
// the NATS server never changes a consumer's max_waiting: every such update
// came back FAILED_PRECONDITION MANAGE_REFUSED "max waiting can not be
// updated". A change of it is refused before the server, as one of
// deliver_policy is, and it is not listed among what can change.
func TestUpdateMaskRefusesMaxWaitingAsTheServerDoes(t *testing.T) {
	p := seekAndAdmin(t)
	if c := restDo(t, p, "team-a-key", http.MethodPost, "/v1/streams/ORDERS/consumers", `{"config":{"durableName":"team-a-w"}}`); c != 0 {
		t.Fatalf("create: %v", c)
	}
	patch := func(mask string) (int, string, string) {
		return patchConsumer(t, p, "team-a-w", `{"config":{"maxWaiting":5,"description":"x"},"updateMask":"`+mask+`"}`)
	}
	code, reason, msg := patch("maxWaiting")
	if code != http.StatusBadRequest || reason != "INVALID_ARGUMENT" || !strings.Contains(msg, "config.max_waiting is fixed when the consumer is created") {
		t.Errorf("updateMask maxWaiting: %d %s %q; want 400 INVALID_ARGUMENT saying max_waiting is fixed at create", code, reason, msg)
	}
	if _, _, msg := patch("deliverPolicy"); strings.Contains(msg, "max_waiting") {
		t.Errorf("a bad mask's answer %q lists max_waiting among what can change", msg)
	}
}

// patchConsumer PATCHes team-a's consumer name over REST with body, and
// returns the answer's status, reason and message.
func patchConsumer(t *testing.T, p *Process, name, body string) (int, string, string) {
	t.Helper()
	code, out := restJSON(t, p, "team-a-key", http.MethodPatch, "/v1/streams/ORDERS/consumers/"+name, body)
	msg, _ := out["message"].(string)
	reason := ""
	if ds, _ := out["details"].([]any); len(ds) > 0 {
		if d, _ := ds[0].(map[string]any); d != nil {
			reason, _ = d["reason"].(string)
		}
	}
	return code, reason, msg
}

// A mask naming no field listed what can change by the proto's names
// (ack_wait), which REST's updateMask refuses (the JSON form of a field
// mask takes lowerCamelCase alone): a REST caller who followed the answer
// was refused again, in protojson's words. The answer lists the REST names
// too, and each of them is taken.
func TestABadUpdateMaskListsTheNamesRESTTakes(t *testing.T) {
	p := seekAndAdmin(t)
	if c := restDo(t, p, "team-a-key", http.MethodPost, "/v1/streams/ORDERS/consumers", `{"config":{"durableName":"team-a-m","description":"d"}}`); c != 0 {
		t.Fatalf("create: %v", c)
	}
	code, reason, msg := patchConsumer(t, p, "team-a-m", `{"config":{"description":"x"},"updateMask":"ackwait"}`)
	_, restNames, found := strings.Cut(msg, "(in REST's updateMask: ")
	if code != http.StatusBadRequest || reason != "INVALID_ARGUMENT" || !found || !strings.Contains(restNames, "maxAckPending") {
		t.Fatalf("updateMask ackwait: %d %s %q; want 400 INVALID_ARGUMENT listing the REST names (maxAckPending among them)", code, reason, msg)
	}
	for _, name := range strings.Split(strings.TrimSuffix(restNames, ")"), ", ") {
		if _, _, msg := patchConsumer(t, p, "team-a-m", `{"config":{"description":"x"},"updateMask":"`+name+`"}`); strings.Contains(msg, "invalid path") || strings.Contains(msg, "is no field") {
			t.Errorf("updateMask %s, a name the answer gave: %q", name, msg)
		}
	}
}
