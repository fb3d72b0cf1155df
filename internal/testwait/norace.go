//go:build !race

package testwait

import "time"

// bound is the longest any single wait may take.
const bound = 2 * time.Minute
