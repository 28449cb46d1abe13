package app

import (
	"encoding/json"
	"io"
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
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodPatch, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers/team-a-w",
			strings.NewReader(`{"config":{"maxWaiting":5,"description":"x"},"updateMask":"`+mask+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer team-a-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var st struct {
			Message string `json:"message"`
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		}
		_ = json.Unmarshal(b, &st)
		reason := ""
		if len(st.Details) > 0 {
			reason = st.Details[0].Reason
		}
		return resp.StatusCode, reason, st.Message
	}
	code, reason, msg := patch("maxWaiting")
	if code != http.StatusBadRequest || reason != "INVALID_ARGUMENT" || !strings.Contains(msg, "config.max_waiting is fixed when the consumer is created") {
		t.Errorf("updateMask maxWaiting: %d %s %q; want 400 INVALID_ARGUMENT saying max_waiting is fixed at create", code, reason, msg)
	}
	if _, _, msg := patch("deliverPolicy"); strings.Contains(msg, "max_waiting") {
		t.Errorf("a bad mask's answer %q lists max_waiting among what can change", msg)
	}
}
