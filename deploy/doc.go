// Package deploy holds what an operator copies to run grasp in production:
// the reverse-proxy configurations (nginx/, caddy/), the systemd unit
// (systemd/), a production grasp.toml, Prometheus alert rules (prometheus/)
// and the backup script (backup.sh).
//
// Its tests run those very files, rendered with throwaway host names, ports
// and certificates, in front of a grasp built from this tree, so that what
// ships is what was tested. The package has no Go API and must never grow
// one: nothing imports it.
package deploy
