package server

import "github.com/grasp-dev/grasp/core/config"

// Reload applies what a reload (SIGHUP) changes in the running server
// besides the plugin set (config.Reloadable): grasp.private_members. A key
// no longer listed loses its access to everything private at once: its
// subscriptions and negentropy sessions that may carry private data end
// with "restricted:", and its NIP-98 tokens stop opening git (issue 23
// part 3).
func (s *Server) Reload(next config.Config) {
	s.confMu.Lock()
	s.conf = &next
	s.confMu.Unlock()
	s.vis.SetMembers(s.members(next))
}

// current is the configuration in force: the one the server started with,
// or the last reload's.
func (s *Server) current() config.Config {
	s.confMu.Lock()
	defer s.confMu.Unlock()
	if s.conf == nil {
		return s.cfg
	}
	return *s.conf
}
