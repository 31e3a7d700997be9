"""pam_limits: limits.conf(5), the PAM stacks that load the module, and the limits a login
session ends up with.

``conf`` parses limits files and decides as the module does; ``pam`` parses PAM service
files; ``build`` says which pam_limits build the root has; ``stack`` walks a service's
session stack; ``service`` says whether a login service is there and runs PAM; ``files``
lists the limits files one call reads; ``start`` gives the limits before pam_limits (PID 1,
a daemon's unit); ``subject`` is the account a session is for; ``session`` puts them
together.
"""
