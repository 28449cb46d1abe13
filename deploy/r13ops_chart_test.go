package deploy

import "testing"

// preStopSleepSeconds: 0, which the schema takes (no pause), rendered a
// preStop of sleep 0s, which the API server of the Kubernetes the chart
// supports (1.30 to 1.32, without PodLifecycleSleepActionAllowZero) refuses
// ("must be greater than 0 and less than terminationGracePeriodSeconds"):
// the Deployment was not made. No pause is no preStop.
func TestNoPreStopPauseRendersNoPreStop(t *testing.T) {
	o := mustRender(t, with(baseValues(), "preStopSleepSeconds", 0))
	c := o.deployment.Spec.Template.Spec.Containers[0]
	if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil && l.PreStop.Sleep.Seconds <= 0 {
		t.Errorf("preStopSleepSeconds 0 renders preStop.sleep.seconds %d; Kubernetes before 1.33 refuses it", l.PreStop.Sleep.Seconds)
	}
	o = mustRender(t, with(baseValues(), "preStopSleepSeconds", 3))
	if l := o.deployment.Spec.Template.Spec.Containers[0].Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Sleep == nil || l.PreStop.Sleep.Seconds != 3 {
		t.Errorf("preStopSleepSeconds 3 renders lifecycle %+v; want a preStop sleep of 3s", l)
	}
}
