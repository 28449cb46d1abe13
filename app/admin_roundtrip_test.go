package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/jetgate/jetgate/internal/authtest"
)

// teamAGateway runs jetgate with the admin block admin (its YAML) over
// ORDERS, where team-a (key team-a-key) may manage and read consumers
// team-a-*.
func teamAGateway(t *testing.T, admin string) *Process {
	t.Helper()
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
admin: %s
auth:
  api_keys:
    - {principal: team-a, sha256: %s}
  grants:
    - {principal: team-a, stream: ORDERS, consumers: ["team-a-*"], actions: [admin, read]}
`, admin, authtest.KeyHash("team-a-key")))
	o := fileOptions(t, file)
	o.NATSListen = ""
	o.Given["nats-listen"] = true
	return start(t, o)
}

// restJSON calls method path with body as bearer, and returns the HTTP
// status and the decoded answer.
func restJSON(t *testing.T, p *Process, bearer, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, "http://"+p.HTTP+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode, out
}

// Over REST as over gRPC, a consumer's config read with GET and sent back
// whole in a PATCH, every field of it in updateMask, changes nothing; and
// a value outside the admin block's bounds is 400 ADMIN_BOUND naming it.
func TestAConsumerReadAndPatchedBackOverRESTIsUnchanged(t *testing.T) {
	p := teamAGateway(t, `{streams: [ORDERS], consumers: ["team-*"], max_deliver: 5, inactive_threshold: 1h}`)
	const path = "/v1/streams/ORDERS/consumers/team-a-rt"
	if code, body := restJSON(t, p, "team-a-key", "POST", "/v1/streams/ORDERS/consumers",
		`{"config": {"durableName": "team-a-rt", "ackWait": "2s", "maxDeliver": 3, "backoff": ["2s", "3s"], "filterSubjects": ["orders.a"],
		  "description": "d", "metadata": {"owner": "x"}, "priorityGroups": ["g"], "priorityPolicy": "PRIORITY_POLICY_OVERFLOW"}}`); code != http.StatusOK {
		t.Fatalf("create: %d %v", code, body)
	}
	_, before := restJSON(t, p, "team-a-key", "GET", path, "")
	cfg, err := json.Marshal(before["config"])
	if err != nil {
		t.Fatal(err)
	}
	mask := "durableName,deliverPolicy,optStartSeq,optStartTime,ackPolicy,numReplicas,ackWait,maxDeliver,backoff,filterSubjects," +
		"maxWaiting,maxAckPending,maxRequestBatch,maxRequestExpires,maxRequestMaxBytes,description,metadata,priorityGroups,priorityPolicy,priorityTimeout,inactiveThreshold"
	if code, body := restJSON(t, p, "team-a-key", "PATCH", path, fmt.Sprintf(`{"config": %s, "updateMask": %q}`, cfg, mask)); code != http.StatusOK {
		t.Fatalf("the config sent back as read: %d %v", code, body)
	}
	_, after := restJSON(t, p, "team-a-key", "GET", path, "")
	if !reflect.DeepEqual(before["config"], after["config"]) {
		t.Errorf("the config sent back as read changed it:\nbefore %v\nafter  %v", before["config"], after["config"])
	}
	code, body := restJSON(t, p, "team-a-key", "PATCH", path, `{"config": {"maxDeliver": "-1"}, "updateMask": "maxDeliver"}`)
	if msg, _ := body["message"].(string); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["details"]), "ADMIN_BOUND") || !strings.Contains(msg, "5") {
		t.Errorf("maxDeliver -1 under a bound of 5: %d %v; want 400 ADMIN_BOUND naming the bound", code, body)
	}
}
