//go:build race

package testwait

import "time"

// bound is the longest any single wait may take. The race detector makes
// code several times slower, so its builds wait longer.
const bound = 5 * time.Minute
