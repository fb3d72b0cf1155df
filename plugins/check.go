package plugins

import (
	"fmt"
)

// Check is `grasp check-config` for plugins: it compiles every file, warms
// one runtime and checks each file exports what its section needs, without
// serving anything.
func Check(opts Options) error {
	opts.PoolSize = 1
	opts.Registerer = nil
	if _, err := NewSet(opts); err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	return nil
}
