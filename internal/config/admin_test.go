package config

import (
	"testing"
	"time"
)

// An admin block alone makes a gateway (callers make its consumers), and
// its unset bounds take the defaults.
func TestAdminAloneServesWithDefaultBounds(t *testing.T) {
	c, err := parseAndValidate("jetgate.yaml", "admin: {streams: [ORDERS], consumers: [\"team-*\"], max_ack_wait: 5m}\n")
	if err != nil {
		t.Fatalf("an admin block alone: %v", err)
	}
	a := c.Admin.CoreAdmin()
	if !a.Matches("ORDERS", "team-a") || a.Matches("ORDERS", "other") || a.Matches("AUDIT", "team-a") {
		t.Errorf("patterns: %+v", a)
	}
	if a.MaxAckWait != 5*time.Minute || a.MaxAckPending != DefaultAdminMaxAckPending || a.MaxWaiting != DefaultAdminMaxWaiting ||
		a.MaxPerPrincipal != DefaultAdminMaxPerPrincipal || a.InactiveThreshold != DefaultAdminInactiveThreshold || a.MaxDeliver != 0 {
		t.Errorf("bounds: %+v", a)
	}
	if (&Config{}).Admin.CoreAdmin() != nil {
		t.Error("no admin block: want nil (the API's consumer RPCs off)")
	}
}
