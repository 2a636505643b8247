import type { LinkingMessages } from '../en.js'

const de: LinkingMessages = {
  signInMethods: 'Anmeldemethoden',
  loadingMethods: 'Anmeldemethoden werden geladen…',
  signInToManage: 'Melde dich in der App an, um deine Anmeldemethoden zu sehen und zu ändern.',
  kindEmail: 'E-Mail',
  kindPasskey: 'Passkey',
  kindWallet: 'Wallet',
  kindOAuth: 'Social-Konto',
  linkedOn: 'Verknüpft am {date}',
  remove: 'Entfernen',
  removeMethod: '{label} entfernen',
  onlyMethod: 'Das ist deine einzige Anmeldemethode. Füge eine weitere hinzu, bevor du sie entfernst.',
  addMethod: 'Anmeldemethode hinzufügen',
  emailToLink: 'Hinzuzufügende E-Mail-Adresse',
  sendCode: 'Code senden',
  typeCodeInFrame: 'Gib den an {email} gesendeten Code im Dialog ein.',
  signInWalletToLink: 'Signiere die Nachricht in {name}',
  linking: 'Wird verknüpft…',
  methodLinked: '{label} verknüpft. Du kannst dich jetzt damit anmelden.',
  removing: 'Wird entfernt…',
  methodRemoved: '{label} entfernt.',
  secondFactor: 'Zweiter Faktor',
  mfaOff: 'Kein zweiter Faktor eingerichtet.',
  mfaOn: 'Eine Authenticator-App ist eingerichtet.',
  setUpTotp: 'Authenticator-App einrichten',
  settingUpTotp: 'Authenticator-App wird eingerichtet…',
  totpEnrolled: 'Authenticator-App eingerichtet. Bewahre deine Wiederherstellungscodes sicher auf.',
  methodsStatus: 'Status der Anmeldemethoden',
}

export default de
