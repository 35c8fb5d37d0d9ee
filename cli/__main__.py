from tauproxy_cli.main import main

main()
