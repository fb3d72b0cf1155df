package server

import "github.com/grasp-dev/grasp/core/config"

// Reload applies what a reload (SIGHUP) changes in the running server
// besides the plugin set (config.Reloadable): grasp.private_members. A key
// no longer listed loses its access to everything private at once: its
// subscriptions and negentropy sessions that may carry private data end
// with "restricted:", and its NIP-98 tokens stop opening git (issue 23
// part 3).
func (s *Server) Reload(next config.Config) {
	s.vis.SetMembers(privateMembers(next))
}
