// Package dashboards tests what packaging/ ships for monitoring a relay:
// the Grafana dashboard (packaging/grafana/torpor-fleet.json) and the
// Prometheus alert rules (packaging/prometheus/torpor-rules.yml) name only
// metrics a real relay with real agents exports, and promtool accepts the
// rules.
package dashboards
