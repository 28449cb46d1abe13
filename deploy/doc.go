// Package deploy holds jetgate's deployment: the Helm chart in helm/jetgate
// (with the Grafana dashboard, helm/jetgate/dashboards, and the alerts, also
// as a plain rules file in prometheus/), the image builder in image/
// (cmd/image, scripts/image), and their tests, which need no cluster. It is
// a module of its own, so that the gateway's module carries no Kubernetes or
// image dependency.
package deploy
