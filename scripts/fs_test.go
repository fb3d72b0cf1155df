package scripts_test

import (
	"io/fs"

	"github.com/grasp-dev/grasp/scripts"
)

func scriptsFS() fs.FS { return scripts.FS }
