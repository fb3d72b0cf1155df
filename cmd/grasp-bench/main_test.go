package main

import (
	"testing"

	"github.com/grasp-dev/grasp/internal/pgtest"
)

// TestMain stops the throwaway PostgreSQL that the abuse command's F25
// flood runs against in TestAbuseEndToEnd.
func TestMain(m *testing.M) { pgtest.Main(m) }
