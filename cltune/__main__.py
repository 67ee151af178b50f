from cltune.cli.app import main

main()
