package app

import (
	"net/http"
	"strings"
	"testing"
)

// A team granted admin and read on team-a-* of ORDERS, the stream the admin
// block opens, lists ORDERS's consumers before it has made one, and after
// deleting its last: an empty list, as Pub/Sub's ListSubscriptions answers
// a topic with none. jetgate answered 404 STREAM_NOT_FOUND ("this gateway
// serves no consumer of stream ORDERS that you may see") for the stream
// Publish serves and CreateConsumer creates on, and ListStreams left ORDERS
// out, so the console showed such a team nothing to start from.
func TestAnAdminStreamListsEmptyBeforeTheFirstConsumer(t *testing.T) {
	p := seekAndAdmin(t)
	if resp, body := get(t, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers", "team-a-key"); resp.StatusCode != http.StatusOK || body != `{"consumers":[]}` {
		t.Errorf("ListConsumers before the first: %s %s; want 200 and an empty list", resp.Status, body)
	}
	if resp, body := get(t, "http://"+p.HTTP+"/v1/streams", "team-a-key"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"name":"ORDERS"`) {
		t.Errorf("ListStreams before the first: %s %s; want ORDERS listed", resp.Status, body)
	}
	if c := restDo(t, p, "team-a-key", http.MethodPost, "/v1/streams/ORDERS/consumers", `{"config":{"durableName":"team-a-x"}}`); c != 0 {
		t.Fatalf("create: %v", c)
	}
	if c := restDo(t, p, "team-a-key", http.MethodDelete, "/v1/streams/ORDERS/consumers/team-a-x", ""); c != 0 {
		t.Fatalf("delete: %v", c)
	}
	if resp, body := get(t, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers", "team-a-key"); resp.StatusCode != http.StatusOK || body != `{"consumers":[]}` {
		t.Errorf("ListConsumers after the last: %s %s; want 200 and an empty list", resp.Status, body)
	}
}
