from cltune.cli import main

main()
