package ginlimit

import (
	"github.com/gin-gonic/gin"
)

// GiveBackSuccess is a Config.GiveBack that gives back the units of every
// request answered with a 2xx status: only the others (a sign-in refused
// with 401) count.
func GiveBackSuccess(c *gin.Context) bool {
	s := c.Writer.Status()
	return s >= 200 && s < 300
}
