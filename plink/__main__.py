from plink.cli import main

main()
