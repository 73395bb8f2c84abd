package admin

// operator is the principal of the unit tests: an operator holding every
// role.
var operator = SocketPrincipal(1000, "operator", Roles())
