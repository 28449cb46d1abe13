package deploy

import (
	"os"
	"strings"
	"testing"
)

// What the NATS alert and the "Calls failing on NATS" panel tell the
// on-call of /readyz holds in both cases they cover. It is 503 while the
// replica's connection to NATS is away, and 200 while a connected NATS does
// not answer in time (a JetStream with no leader or quorum: two of three
// servers down, jetgate connected to the third): a black-box try showed
// Publishes failing UNAVAILABLE for 20s with /readyz at 200. The texts said
// "/readyz answers 503" of both, and sent the on-call to look for pods that
// were not ready.
func TestTheNATSAlertSaysWhenReadyzStays200(t *testing.T) {
	texts := map[string]string{
		"the chart's rule": chartRules(t, baseValues()).rule(t, "JetgateNATSUnavailable").Annotations["description"],
		"the plain rule":   readPlainRules(t).rule(t, "JetgateNATSUnavailable").Annotations["description"],
	}
	for _, p := range readDashboard(t).allPanels() {
		if p.Title == "Calls failing on NATS" {
			texts["the panel "+p.Title] += p.Description
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, para := range strings.Split(string(readme), "\n- ") {
		if strings.HasPrefix(para, "*Calls failing on NATS.*") {
			texts["README's panel"] = para
		}
	}
	if len(texts) != 4 {
		t.Fatalf("found %d of the 4 texts", len(texts))
	}
	for where, text := range texts {
		if strings.Contains(text, "/readyz") && !strings.Contains(text, "200") {
			t.Errorf("%s says /readyz answers 503, not that it stays 200 while a connected NATS does not answer:\n%s", where, text)
		}
	}
}
