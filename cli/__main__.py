from tauproxy_cli.console import console

console()
